"""Who answered: a person or a voicemail greeting, from the first seconds of the far end's audio;
and, on a voicemail, when its greeting is over (docs/answering-machines.md).

A person picks up and says something short ("Hello?", "Dana speaking") and then waits for an
answer; a voicemail system plays a recorded greeting that runs on for several seconds with only
the short pauses between words, often names itself ("leave a message after the tone") and ends
with a beep. So, on 20 ms frames of 8 kHz PCM:

- a frame is *speech* when its RMS level is at least ``speech_rms`` (default 400 of 32767,
  about -38 dBFS: well above line noise, well below any voice on a telephone line);
- an *utterance* is speech whose pauses are all shorter than ``end_pause_seconds`` (0.7 s: longer
  than the gaps inside a recorded sentence, shorter than a person's wait for a reply);
- ``voicemail`` as soon as the first utterance has lasted longer than ``greeting_seconds``
  (2.5 s: "Hello, this is Dana speaking" fits; "Hi, you've reached Dana, I can't take your call
  right now..." does not), as soon as a beep has sounded for 150 ms (``speech.tones``), or when
  the recogniser's text of what was said holds a mailbox phrase (``heard``);
- ``human`` when the first utterance ends (a pause of ``end_pause_seconds``) before that, or when
  nothing is said for ``silence_seconds`` (3 s: a person who picked up and waits). Silence counts
  as a person because only a greeting is evidence of a machine.

``GreetingEnd`` then says when a voicemail is ready to record: the beep has stopped, or
``silence_seconds`` (1.5 s) of quiet followed the greeting.

Pure audio (and text) in, a verdict out: no I/O, a few operations per frame.
"""

from __future__ import annotations

import math
import re
from array import array
from dataclasses import dataclass, field

from callplane.speech.tones import Beep, ToneDetector
from callplane.telephony.base import FRAME_BYTES, FRAME_MS, AnsweredBy

SPEECH_RMS = 400.0
GREETING_SECONDS = 2.5
END_PAUSE_SECONDS = 0.7
SILENCE_SECONDS = 3.0
#: Words only a recorded greeting says (compared on lower-case words, apostrophes kept).
MAILBOX_PHRASES = (
    "leave a message",
    "leave your message",
    "leave me a message",
    "record your message",
    "after the tone",
    "after the beep",
    "at the tone",
    "at the beep",
    "not available",
    "unavailable",
    "can't take your call",
    "cannot take your call",
    "can't come to the phone",
    "voicemail",
    "voice mail",
    "mailbox",
    "mail box",
)
_NOT_WORD = re.compile(r"[^a-z0-9']+")


def mailbox_words(text: str) -> bool:
    """Whether recognised text sounds like a mailbox greeting."""
    words = " " + _NOT_WORD.sub(" ", text.casefold().replace("\u2019", "'")).strip() + " "
    return any(f" {phrase} " in words for phrase in MAILBOX_PHRASES)


@dataclass
class AnsweringDetector:
    speech_rms: float = SPEECH_RMS
    greeting_seconds: float = GREETING_SECONDS
    end_pause_seconds: float = END_PAUSE_SECONDS
    silence_seconds: float = SILENCE_SECONDS
    verdict: AnsweredBy | None = field(default=None, init=False)
    #: What decided it: ``greeting``, ``beep``, ``words``, ``pause`` or ``silence``.
    reason: str | None = field(default=None, init=False)
    tones: ToneDetector = field(default_factory=ToneDetector, init=False)
    _elapsed_ms: int = field(default=0, init=False)
    _speech_started_ms: int | None = field(default=None, init=False)
    _last_speech_ms: int = field(default=0, init=False)
    _utterance: bytearray = field(default_factory=bytearray, init=False)

    def feed(self, pcm: bytes) -> AnsweredBy | None:
        """One 20 ms frame (16-bit mono); the verdict once there is one, else ``None``."""
        if self.verdict is not None:
            return self.verdict
        now = self._elapsed_ms
        self._elapsed_ms += FRAME_MS
        beep = self.tones.feed(pcm)
        if beep is not None or self.tones.beeping:
            return self._decide("voicemail", "beep")
        if frame_rms(pcm) >= self.speech_rms:
            if self._speech_started_ms is None:
                self._speech_started_ms = now
            self._last_speech_ms = now + FRAME_MS
            self._utterance += pcm
            if (self._last_speech_ms - self._speech_started_ms) / 1000 > self.greeting_seconds:
                return self._decide("voicemail", "greeting")
        elif self._speech_started_ms is None:
            if self._elapsed_ms / 1000 >= self.silence_seconds:
                return self._decide("human", "silence")
        else:
            self._utterance += pcm
            if self.pause_seconds >= self.end_pause_seconds:
                return self._decide("human", "pause")
        return None

    def heard(self, text: str) -> AnsweredBy | None:
        """The recogniser's text of the first utterance: mailbox words make it a voicemail."""
        if self.verdict is None and mailbox_words(text):
            self._decide("voicemail", "words")
        return self.verdict

    def overrule(self, text: str) -> bool:
        """A ``human`` verdict from a pause that the utterance's words contradict: it becomes
        ``voicemail`` (a short greeting such as "Sam's voicemail." ended in a pause)."""
        if self.reason == "pause" and mailbox_words(text):
            self._decide("voicemail", "words")
            return True
        return False

    def _decide(self, verdict: AnsweredBy, reason: str) -> AnsweredBy:
        self.verdict, self.reason = verdict, reason
        return verdict

    @property
    def pause_seconds(self) -> float:
        """Quiet since the first utterance's last speech (0 while nothing has been said)."""
        if self._speech_started_ms is None:
            return 0.0
        return (self._elapsed_ms - self._last_speech_ms) / 1000

    @property
    def utterance(self) -> bytes:
        """The first utterance's audio so far (for the recogniser)."""
        return bytes(self._utterance)

    @property
    def decided_after_seconds(self) -> float:
        return self._elapsed_ms / 1000

    @property
    def longest_wait_seconds(self) -> float:
        """The most audio a verdict can need (silence, then a greeting that only just ends)."""
        return self.silence_seconds + self.greeting_seconds + self.end_pause_seconds


@dataclass
class GreetingEnd:
    """Fed a voicemail's audio from the answer on: ``feed`` is True once the greeting is over
    (a beep has stopped, or ``silence_seconds`` of quiet), so a message left now is recorded
    whole. A greeting that never stops is taken as over after ``longest_seconds``."""

    silence_seconds: float = 1.5
    speech_rms: float = SPEECH_RMS
    longest_seconds: float = 30.0
    beep: Beep | None = field(default=None, init=False)
    done: bool = field(default=False, init=False)
    tones: ToneDetector = field(default_factory=ToneDetector, init=False)
    _elapsed_ms: int = field(default=0, init=False)
    _quiet_ms: int = field(default=0, init=False)
    _rest: bytes = field(default=b"", init=False)

    def feed(self, pcm: bytes) -> bool:
        """Any length of 16-bit mono PCM (it is cut into 20 ms frames)."""
        data = self._rest + pcm
        whole = len(data) - len(data) % FRAME_BYTES
        self._rest = data[whole:]
        for offset in range(0, whole, FRAME_BYTES):
            if self.done:
                break
            self._frame(data[offset : offset + FRAME_BYTES])
        return self.done

    def _frame(self, frame: bytes) -> None:
        self._elapsed_ms += FRAME_MS
        beep = self.tones.feed(frame)
        if beep is not None:
            self.beep, self.done = beep, True
            return
        loud = self.tones.in_tone or frame_rms(frame) >= self.speech_rms
        self._quiet_ms = 0 if loud else self._quiet_ms + FRAME_MS
        quiet_long_enough = self._quiet_ms / 1000 >= self.silence_seconds
        self.done = quiet_long_enough or self._elapsed_ms / 1000 >= self.longest_seconds

    @property
    def heard_seconds(self) -> float:
        return self._elapsed_ms / 1000


def frame_rms(pcm: bytes) -> float:
    if len(pcm) < 2:
        return 0.0
    samples = array("h", pcm[: len(pcm) - len(pcm) % 2])
    return math.sqrt(sum(s * s for s in samples) / len(samples))


def classify(pcm: bytes, frame_bytes: int = FRAME_BYTES) -> AnsweredBy:
    """The verdict on a stretch of audio already heard (``human`` if it never decides)."""
    detector = AnsweringDetector()
    for offset in range(0, len(pcm) - frame_bytes + 1, frame_bytes):
        verdict = detector.feed(pcm[offset : offset + frame_bytes])
        if verdict is not None:
            return verdict
    return "human"
