"""Who answered: a person or a voicemail greeting, from the first seconds of the far end's audio.

The heuristic (what DESIGN §10's ``answered_by`` asks for): a person picks up and says something
short ("Hello?", "Dana speaking") and then waits for an answer; a voicemail system starts a
recorded greeting that runs on for several seconds with only the short pauses between words and
phrases. So, on 20 ms frames of 8 kHz PCM:

- a frame is *speech* when its RMS level is at least ``speech_rms`` (default 400 of 32767,
  about -38 dBFS: well above line noise, well below any voice on a telephone line);
- an *utterance* is speech whose pauses are all shorter than ``end_pause_seconds`` (0.7 s: longer
  than the gaps inside a recorded sentence, shorter than a person's wait for a reply);
- ``voicemail`` as soon as the first utterance has lasted longer than ``greeting_seconds``
  (2.5 s: "Hello, this is Dana speaking" fits; "Hi, you've reached Dana, I can't take your call
  right now..." does not);
- ``human`` when the first utterance ends (a pause of ``end_pause_seconds``) before that, or when
  nothing is said for ``silence_seconds`` (3 s: a person who picked up and waits). Silence counts
  as a person because only a long first utterance is evidence of a machine.

Pure audio in, a verdict out: no model, no dependency, a few operations per frame.
"""

from __future__ import annotations

import asyncio
import logging
import math
from array import array
from dataclasses import dataclass, field

from callplane.telephony.base import FRAME_MS, AnsweredBy, AudioFrame, Connection, Frame
from callplane.telephony.replay import Replayed

log = logging.getLogger("callplane.speech.answering")

SPEECH_RMS = 400.0
GREETING_SECONDS = 2.5
END_PAUSE_SECONDS = 0.7
SILENCE_SECONDS = 3.0


@dataclass
class AnsweringDetector:
    speech_rms: float = SPEECH_RMS
    greeting_seconds: float = GREETING_SECONDS
    end_pause_seconds: float = END_PAUSE_SECONDS
    silence_seconds: float = SILENCE_SECONDS
    verdict: AnsweredBy | None = field(default=None, init=False)
    _elapsed_ms: int = field(default=0, init=False)
    _speech_started_ms: int | None = field(default=None, init=False)
    _last_speech_ms: int = field(default=0, init=False)

    def feed(self, pcm: bytes) -> AnsweredBy | None:
        """One 20 ms frame (16-bit mono); the verdict once there is one, else ``None``."""
        if self.verdict is not None:
            return self.verdict
        now = self._elapsed_ms
        self._elapsed_ms += FRAME_MS
        if frame_rms(pcm) >= self.speech_rms:
            if self._speech_started_ms is None:
                self._speech_started_ms = now
            self._last_speech_ms = now + FRAME_MS
            if (self._last_speech_ms - self._speech_started_ms) / 1000 > self.greeting_seconds:
                self.verdict = "voicemail"
        elif self._speech_started_ms is None:
            if self._elapsed_ms / 1000 >= self.silence_seconds:
                self.verdict = "human"
        elif (self._elapsed_ms - self._last_speech_ms) / 1000 >= self.end_pause_seconds:
            self.verdict = "human"
        return self.verdict

    @property
    def decided_after_seconds(self) -> float:
        return self._elapsed_ms / 1000

    @property
    def longest_wait_seconds(self) -> float:
        """The most audio a verdict can need (silence, then a greeting that only just ends)."""
        return self.silence_seconds + self.greeting_seconds + self.end_pause_seconds


def frame_rms(pcm: bytes) -> float:
    if len(pcm) < 2:
        return 0.0
    samples = array("h", pcm[: len(pcm) - len(pcm) % 2])
    return math.sqrt(sum(s * s for s in samples) / len(samples))


def classify(pcm: bytes, frame_bytes: int = 320) -> AnsweredBy:
    """The verdict on a stretch of audio already heard (``human`` if it never decides)."""
    detector = AnsweringDetector()
    for offset in range(0, len(pcm) - frame_bytes + 1, frame_bytes):
        verdict = detector.feed(pcm[offset : offset + frame_bytes])
        if verdict is not None:
            return verdict
    return "human"


async def detect_answered_by(connection: Connection) -> tuple[AnsweredBy, Connection]:
    """Who answered an outbound call, and the connection to hold the conversation on.

    An adapter that knows (the simulated network) has said so; a text connection has no audio
    to judge and is a person. Otherwise this listens to the first seconds (at most
    ``longest_wait_seconds``; a far end that sends no audio at all is a person) and returns a
    connection that replays what was heard, since the conversation must hear it too. If the
    listening task is cancelled the call is hung up first: nobody else holds it yet.
    """
    if connection.answered_by is not None:
        return connection.answered_by, connection
    if connection.media != "audio":
        return "human", connection
    detector = AnsweringDetector()
    heard: list[Frame] = []
    frames = connection.frames()
    verdict: AnsweredBy | None = None
    try:
        async with asyncio.timeout(detector.longest_wait_seconds):
            async for frame in frames:
                heard.append(frame)
                if isinstance(frame, AudioFrame):
                    verdict = detector.feed(frame.pcm)
                if verdict is not None:
                    break
    except TimeoutError:
        pass
    except Exception:
        log.exception("listening for who answered failed; taking it for a person")
    except BaseException:
        await asyncio.shield(connection.hangup())
        raise
    finally:
        await frames.aclose()  # type: ignore[attr-defined]
    replayed = Replayed(connection, heard)
    replayed.answered_by = verdict or "human"
    return replayed.answered_by, replayed
