"""Model endpointing in the listener (docs/voices.md#end-of-turn): the pause's words and the
model's verdict on its voice reach the decision together, and a turn on which they disagree
waits the middle length. A scripted voice detector, a recogniser and a model that answer at
once: no speech is recognised, nothing is timed."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

import pytest

from callplane.engine.conversation import listening
from callplane.engine.conversation.endpointing import Endpointing
from callplane.engine.conversation.listening import CallerSaid, Listener
from callplane.speech.base import Segment, Transcriber
from callplane.speech.vad import TurnDetector, TurnEnded, TurnEvent
from callplane.telephony.base import FRAME_BYTES, AudioFrame, Frame
from tests.fakes import ListeningLine

SPEECH_FRAMES, PAUSE_FRAMES, SILENT_FRAMES = 10, 6, 60  # 20 ms frames; the guess fires at 6


class Scripted:
    """The first frames are speech, every later one silence (the listener's own gap-filling
    silence included)."""

    def __init__(self) -> None:
        self._frames = 0

    def is_speech(self, frame: bytes) -> bool:
        self._frames += 1
        return self._frames <= SPEECH_FRAMES


class Recorder(TurnDetector):
    def __init__(self) -> None:
        super().__init__(Scripted(), pause_ms=120, end_silence_ms=800)
        self.silences: list[float] = []

    def push(self, pcm: bytes) -> list[TurnEvent]:
        events = super().push(pcm)
        self.silences += [e.silence_seconds for e in events if isinstance(e, TurnEnded)]
        return events


class Says(Transcriber):
    def __init__(self, text: str) -> None:
        self.text = text
        self.answered = threading.Event()

    def transcribe(
        self,
        pcm: bytes,
        sample_rate: int,
        *,
        hints: Sequence[str] = (),
        abandoned: threading.Event | None = None,
    ) -> list[Segment]:
        self.answered.set()
        return [Segment(text=self.text, start=0.0, end=1.0, confidence=1.0)]


class Hears:
    """The end-of-turn model, with a verdict fixed in advance."""

    def __init__(self, probability: float) -> None:
        self._probability = probability
        self.scored = 0
        self.answered = threading.Event()

    def probability(self, pcm: bytes, rate: int) -> float:
        self.scored += 1
        self.answered.set()
        return self._probability


@dataclass(frozen=True)
class Noted(Endpointing):
    """The real decision, noted: what the listener asked and what it was told."""

    asked: list[tuple[str, float | None, int]] = field(default_factory=list)

    def wait_ms(self, text: str, complete_probability: float | None = None) -> int:
        wait = super().wait_ms(text, complete_probability)
        self.asked.append((text, complete_probability, wait))
        return wait


class Caller(ListeningLine):
    """Speaks, pauses, and once the pause's words and voice have both been judged, stays silent
    long enough for any wait to end the turn."""

    def __init__(self, *judged: threading.Event) -> None:
        super().__init__()
        self._judged = judged

    async def frames(self) -> AsyncIterator[Frame]:
        frame = AudioFrame(bytes(FRAME_BYTES))
        for _ in range(SPEECH_FRAMES + PAUSE_FRAMES):
            yield frame
        for judged in self._judged:
            assert await asyncio.to_thread(judged.wait, 30)
        for _ in range(SILENT_FRAMES):
            await asyncio.sleep(0.001)
            yield frame


async def _turn(
    monkeypatch: pytest.MonkeyPatch, text: str, probability: float, *, scored: bool = True
) -> tuple[Noted, Hears, Recorder, list[str]]:
    model = Hears(probability)
    monkeypatch.setattr(listening, "shared_model", lambda: model)
    transcriber = Says(text)
    detector = Recorder()
    endpointing = Noted(mode="model")
    judged = [transcriber.answered, model.answered] if scored else [transcriber.answered]
    listener = Listener(
        Caller(*judged),
        transcriber=transcriber,
        detector=lambda: detector,
        endpointing=endpointing,
    )
    said = [e.text async for e in listener.events() if isinstance(e, CallerSaid)]
    return endpointing, model, detector, said


@pytest.mark.parametrize(
    ("text", "probability", "wait"),
    [
        # Both say the turn is over.
        ("I'd like to move my appointment to Friday morning.", 0.79, 200),
        # A finished sentence in a voice that sounds unfinished (espeak-ng's, to the model).
        ("Nine o'clock would be great, thank you.", 0.02, 400),
        # A finished-sounding voice, the question's mark lost by the recogniser.
        ("can you also send me a reminder by text message", 0.85, 400),
        # Both say it goes on.
        ("can you also send me a reminder by text message", 0.2, 800),
    ],
)
async def test_the_voice_and_the_words_decide_the_wait_together(
    monkeypatch: pytest.MonkeyPatch, text: str, probability: float, wait: int
) -> None:
    endpointing, model, detector, said = await _turn(monkeypatch, text, probability)

    assert said == [text]
    # Words without a final mark are not left to the text alone: the voice is heard too.
    assert model.scored == 1
    assert endpointing.asked == [(text, probability, wait)]
    # The turn was not declared before its wait.
    [silence] = detector.silences
    assert silence >= wait / 1000


async def test_words_that_say_the_turn_goes_on_wait_the_longest_whatever_the_voice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = "I'd like to"
    endpointing, _, detector, said = await _turn(monkeypatch, text, 0.99, scored=False)

    assert said == [text]
    # The voice's verdict may not even be asked for (skipped when its turn on the pool comes
    # after the words): it cannot change the wait.
    assert endpointing.asked in ([(text, None, 800)], [(text, 0.99, 800)])
    assert detector.silences == [0.8]
