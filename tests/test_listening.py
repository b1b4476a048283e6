"""The listener's early recognition: a guess started at the caller's first pause is the turn's
text only when the turn ended on exactly the audio it heard; the call's keyterms reach the
recogniser as hints."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Sequence

import pytest

from callplane.engine.conversation.listening import CallerSaid, Listener
from callplane.speech.base import Segment, Transcriber
from callplane.speech.vad import TurnDetector, TurnEnded, TurnEvent
from callplane.telephony.base import FRAME_BYTES, AudioFrame, Frame
from tests.fakes import ListeningLine


class Scripted:
    """Frame decisions read from a script (1 = speech), so turns, pauses and cuts fall on known
    frames."""

    def __init__(self, script: str) -> None:
        self._script = iter(script)

    def is_speech(self, frame: bytes) -> bool:
        return next(self._script, "0") == "1"


class Recorder(TurnDetector):
    def __init__(self, script: str, **options: float) -> None:
        super().__init__(Scripted(script), **options)  # type: ignore[arg-type]
        self.ended: list[bytes] = []

    def push(self, pcm: bytes) -> list[TurnEvent]:
        events = super().push(pcm)
        self.ended += [e.audio for e in events if isinstance(e, TurnEnded)]
        return events


class Lengths(Transcriber):
    """Says how much audio it was given."""

    def __init__(self) -> None:
        self.heard: list[int] = []
        self.hints: list[tuple[str, ...]] = []
        self.threads: set[str] = set()

    def transcribe(
        self,
        pcm: bytes,
        sample_rate: int,
        *,
        hints: Sequence[str] = (),
        abandoned: threading.Event | None = None,
    ) -> list[Segment]:
        self.heard.append(len(pcm))
        self.hints.append(tuple(hints))
        self.threads.add(threading.current_thread().name)
        return [Segment(text=f"{len(pcm)} bytes", start=0.0, end=1.0, confidence=1.0)]


class Frames(ListeningLine):
    def __init__(self, count: int) -> None:
        super().__init__()
        self._count = count

    async def frames(self) -> AsyncIterator[Frame]:
        for _ in range(self._count):
            yield AudioFrame(bytes(FRAME_BYTES))


SPEECH, PAUSE, END = "1" * 10, "0" * 15, "0" * 30  # 20 ms frames: the pause guess fires at 12


@pytest.mark.parametrize(
    ("script", "options", "recognitions"),
    [
        # The pause's guess heard the whole turn: it is the turn's text, recognised once.
        pytest.param(SPEECH + END, {}, 1, id="ended-at-the-pause"),
        # The caller went on after a pause: the later pause's guess, not the first, is used;
        # the first was dropped when the caller spoke again, before it had started (the frames
        # here arrive at once), so it never ran.
        pytest.param(SPEECH + PAUSE + SPEECH * 2 + END, {}, 1, id="spoke-again"),
        # Cut at its longest 5 frames into a silence, after an earlier pause: that pause's
        # guess heard only the start, so the whole turn is recognised anew.
        pytest.param(
            SPEECH + PAUSE + SPEECH * 2 + END, {"max_turn_seconds": 1.0}, 1, id="cut-at-longest"
        ),
    ],
)
async def test_the_turns_text_is_recognised_from_all_of_its_audio(
    script: str, options: dict[str, float], recognitions: int
) -> None:
    detector = Recorder(script, **options)
    transcriber = Lengths()
    listener = Listener(
        Frames(len(script)), transcriber=transcriber, hints=["Acme"], detector=lambda: detector
    )

    said = [e for e in [e async for e in listener.events()] if isinstance(e, CallerSaid)]

    assert [e.text for e in said] == [f"{len(audio)} bytes" for audio in detector.ended]
    assert len(said) == 1 and len(transcriber.heard) == recognitions
    assert set(transcriber.hints) == {("Acme",)}  # the call's keyterms, as hints
    # On the recognition pool, not the loop's default executor that synthesis also used.
    assert transcriber.threads and all(t.startswith("recognition") for t in transcriber.threads)


class Patient(Transcriber):
    """Waits a while for the guess to be abandoned, and says whether it was."""

    def __init__(self) -> None:
        self.abandoned: list[bool] = []

    def transcribe(
        self,
        pcm: bytes,
        sample_rate: int,
        *,
        hints: Sequence[str] = (),
        abandoned: threading.Event | None = None,
    ) -> list[Segment]:
        gone = abandoned is not None and abandoned.wait(0.5)
        self.abandoned.append(gone)
        return [Segment(text=f"{len(pcm)} bytes", start=0.0, end=1.0, confidence=1.0)]


class PacedFrames(Frames):
    async def frames(self) -> AsyncIterator[Frame]:
        for _ in range(self._count):
            await asyncio.sleep(0.005)
            yield AudioFrame(bytes(FRAME_BYTES))


async def test_a_running_guess_is_told_when_the_caller_goes_on() -> None:
    # The recogniser can then stop before its most expensive half (WhisperTranscriber skips
    # decoding): the guess's text would never be used.
    script = SPEECH + PAUSE + SPEECH * 2 + END
    detector = Recorder(script)
    transcriber = Patient()
    listener = Listener(
        PacedFrames(len(script)), transcriber=transcriber, detector=lambda: detector
    )

    said = [e for e in [e async for e in listener.events()] if isinstance(e, CallerSaid)]

    # The first pause's guess was running when the caller spoke again; the turn's own was not
    # abandoned, and its text is the turn's.
    assert transcriber.abandoned == [True, False]
    assert [e.text for e in said] == [f"{len(detector.ended[0])} bytes"]
