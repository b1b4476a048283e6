"""Voice activity and end of turn on telephone audio (the turn loop of docs/engine-core.md).

Input is what ``telephony.base`` carries: 8 kHz, 16-bit little-endian mono PCM, in chunks of any
size (re-cut here into 20 ms frames). Each frame is classified speech / not speech, by WebRTC's
VAD (``webrtcvad-wheels``, in the ``callplane[speech]`` extra: a GMM over sub-band energies, made
for exactly this band) or, when that is not installed, by ``EnergyClassifier``: frame loudness
against a slowly tracked noise floor — adequate on clean lines, fooled by loud steady noise.

``TurnDetector`` smooths the frame decisions into two events the turn loop acts on:

- ``SpeechStarted`` once most of the recent frames are speech (the caller barging in);
- ``SpeechPaused`` once they have been silent for ``pause_ms``: the turn so far, so that
  recognition can start while the end of the turn is still being waited for (most pauses this
  long are the end of the turn; if the caller goes on, the guess is thrown away);
- ``TurnEnded`` once the caller has been silent for ``end_silence_ms`` after speaking, with the
  turn's audio (a little from before the start, trailing silence cut) for recognition.
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from dataclasses import dataclass
from typing import Protocol

from callplane.telephony.base import FRAME_BYTES, FRAME_MS, SAMPLE_RATE


class FrameClassifier(Protocol):
    def is_speech(self, frame: bytes) -> bool:
        """One 20 ms frame of 8 kHz PCM: speech or not."""


class EnergyClassifier:
    """Loud enough above the line's noise floor.

    The floor follows the quietest recent frames: it drops at once to a quieter frame and rises
    slowly (``rise_db_per_second``), so steady line noise is learnt within a second or two while
    the short pauses inside speech keep pulling it back down.
    """

    def __init__(
        self,
        margin_db: float = 12.0,
        min_speech_db: float = -50.0,
        rise_db_per_second: float = 10.0,
    ) -> None:
        self.margin_db = margin_db
        self.min_speech_db = min_speech_db
        self._rise = rise_db_per_second * FRAME_MS / 1000
        self._floor_db = min_speech_db - margin_db

    def is_speech(self, frame: bytes) -> bool:
        level = frame_level_db(frame)
        self._floor_db = max(min(self._floor_db + self._rise, level), self.min_speech_db - 20)
        return level > max(self._floor_db + self.margin_db, self.min_speech_db)


class WebRtcClassifier:
    """WebRTC's VAD, gated by loudness.

    WebRTC's model judges the spectrum's shape, not its level: after speech it takes faint white
    noise for speech indefinitely (measured here on espeak-ng audio). The energy gate keeps it
    honest; WebRTC in turn rejects loud sounds that are not voice-like.
    ``aggressiveness`` 0 (keeps most audio) to 3 (keeps only clear speech).
    """

    def __init__(self, aggressiveness: int = 2) -> None:
        import webrtcvad

        self._vad = webrtcvad.Vad(aggressiveness)
        self._gate = EnergyClassifier()

    def is_speech(self, frame: bytes) -> bool:
        loud = self._gate.is_speech(frame)
        return loud and bool(self._vad.is_speech(frame, SAMPLE_RATE))


def frame_level_db(frame: bytes) -> float:
    """RMS level in dB relative to full scale (-120 for digital silence)."""
    samples = array("h", frame)
    mean_square = sum(x * x for x in samples) / len(samples) if samples else 0
    return 10 * math.log10(mean_square / 32768**2) if mean_square else -120.0


def default_classifier() -> FrameClassifier:
    try:
        return WebRtcClassifier()
    except ImportError:
        return EnergyClassifier()


@dataclass(frozen=True)
class SpeechStarted:
    pass


@dataclass(frozen=True)
class SpeechPaused:
    #: The turn's PCM up to the pause (cut as ``TurnEnded.audio`` would be).
    audio: bytes


@dataclass(frozen=True)
class TurnEnded:
    #: The turn's PCM, for recognition.
    audio: bytes
    #: How long the caller had been silent when the turn was declared over (for latency).
    silence_seconds: float


TurnEvent = SpeechStarted | SpeechPaused | TurnEnded


class TurnDetector:
    def __init__(
        self,
        classifier: FrameClassifier | None = None,
        *,
        start_ms: int = 120,
        window_ms: int = 200,
        pause_ms: int = 240,
        end_silence_ms: int = 500,
        pre_roll_ms: int = 200,
        max_turn_seconds: float = 30.0,
    ) -> None:
        self._classifier = classifier or default_classifier()
        self._start_frames = max(1, start_ms // FRAME_MS)
        self._end_frames = max(1, end_silence_ms // FRAME_MS)
        self._pause_frames = max(1, min(pause_ms, end_silence_ms) // FRAME_MS)
        self._max_frames = int(max_turn_seconds * 1000 // FRAME_MS)
        self._window: deque[tuple[bytes, bool]] = deque(
            maxlen=max(self._start_frames, window_ms // FRAME_MS, pre_roll_ms // FRAME_MS)
        )
        self._pending = b""
        self._speaking = False
        self._turn: list[bytes] = []
        self._silent_frames = 0
        self._voiced_frames = 0

    @property
    def speaking(self) -> bool:
        return self._speaking

    @property
    def silent_ms(self) -> int:
        """How long the caller has been silent within the current turn."""
        return self._silent_frames * FRAME_MS if self._speaking else 0

    @property
    def voiced_ms(self) -> int:
        """Voice heard in the current stretch of the turn: since it began, or since the caller
        spoke again after its last pause (a backchannel is told by it: ``BACKCHANNEL_MS``)."""
        return self._voiced_frames * FRAME_MS if self._speaking else 0

    def end_after(self, silence_ms: int) -> None:
        """From now on, this much silence ends the turn (smart endpointing decides it from what
        was said; a silence already that long ends the turn at the next frame)."""
        self._end_frames = max(1, silence_ms // FRAME_MS)

    def push(self, pcm: bytes) -> list[TurnEvent]:
        self._pending += pcm
        events: list[TurnEvent] = []
        while len(self._pending) >= FRAME_BYTES:
            frame, self._pending = self._pending[:FRAME_BYTES], self._pending[FRAME_BYTES:]
            event = self._frame(frame)
            if event is not None:
                events.append(event)
        return events

    def _frame(self, frame: bytes) -> TurnEvent | None:
        speech = self._classifier.is_speech(frame)
        if not self._speaking:
            self._window.append((frame, speech))
            if sum(1 for _, voiced in self._window if voiced) < self._start_frames:
                return None
            self._speaking = True
            self._turn = [f for f, _ in self._window]
            self._voiced_frames = sum(1 for _, voiced in self._window if voiced)
            self._window.clear()
            self._silent_frames = 0
            return SpeechStarted()
        self._turn.append(frame)
        if speech:
            if self._silent_frames >= self._pause_frames:
                self._voiced_frames = 0  # a new stretch after a pause
            self._voiced_frames += 1
        self._silent_frames = 0 if speech else self._silent_frames + 1
        if self._silent_frames >= self._end_frames or len(self._turn) >= self._max_frames:
            return self._end_turn()
        if self._silent_frames == self._pause_frames < self._end_frames:
            return SpeechPaused(self._audio())
        return None

    def _audio(self) -> bytes:
        # Keep a little of the trailing silence: recognisers clip words that end at the edge.
        keep = len(self._turn) - max(0, self._silent_frames - 5)
        return b"".join(self._turn[:keep])

    def _end_turn(self) -> TurnEnded:
        ended = TurnEnded(self._audio(), silence_seconds=self._silent_frames * FRAME_MS / 1000)
        self._speaking, self._turn, self._silent_frames = False, [], 0
        self._voiced_frames = 0
        return ended
