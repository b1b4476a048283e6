"""Listening for who answered on an audio line (``engine.answering``): the audio's verdict,
the recogniser's mailbox words on a short greeting, and the frames handed on to the
conversation. The line is tests/fakes.py's; the recogniser is Whisper, except where a recogniser
that never answers in time is the point."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from callplane.engine.answering import detect_answered_by
from callplane.speech.base import Segment, Transcriber
from callplane.telephony.base import AudioFrame
from tests.audio import transcriber as whisper
from tests.fakes import FakeConnection
from tests.sipp_peer import tone_pcm
from tests.speech_audio import silence, spoken


class SaysText(Transcriber):
    """Recognises every stretch of audio as ``text``, once ``release`` is set (at once if it
    starts set): a recogniser as slow as the test wants."""

    def __init__(self, text: str, *, released: bool = True) -> None:
        self.text = text
        self.release = threading.Event()
        if released:
            self.release.set()
        self.heard: list[int] = []

    def transcribe(
        self,
        pcm: bytes,
        sample_rate: int,
        *,
        hints: Sequence[str] = (),
        abandoned: threading.Event | None = None,
    ) -> list[Segment]:
        self.heard.append(len(pcm))
        self.release.wait(10)
        return [Segment(text=self.text, start=0.0, end=1.0, confidence=1.0)]


def _line(audio: bytes) -> FakeConnection:
    connection = FakeConnection(answered_by=None)
    for offset in range(0, len(audio) - 319, 320):
        connection.send(audio[offset : offset + 320])
    return connection


SHORT_GREETING = silence(0.2) + spoken("Sam's voicemail.") + silence(1.5)


async def test_mailbox_words_make_a_short_greeting_a_voicemail() -> None:
    # The audio alone takes it for a person (next test but one); the words say otherwise. The
    # deadline is the test's to give: what it bounds is tested below, with a recogniser that is
    # too slow on purpose; here Whisper may take its time on a busy machine.
    verdict, _ = await detect_answered_by(
        _line(SHORT_GREETING), whisper(), words_deadline_seconds=30
    )
    assert verdict == "voicemail"


async def test_a_short_answer_without_mailbox_words_is_a_person() -> None:
    hello = silence(0.2) + spoken("Hello, Sam speaking.") + silence(1.5)
    verdict, replayed = await detect_answered_by(_line(hello), whisper(), words_deadline_seconds=30)
    assert verdict == "human" and replayed.answered_by == "human"


async def test_without_a_recogniser_the_audio_alone_decides() -> None:
    verdict, _ = await detect_answered_by(_line(SHORT_GREETING))
    assert verdict == "human"


async def test_a_recogniser_too_slow_for_the_deadline_leaves_a_person_a_person() -> None:
    transcriber = SaysText("Sam's voicemail.", released=False)
    try:
        verdict, _ = await detect_answered_by(_line(SHORT_GREETING), transcriber)
    finally:
        transcriber.release.set()
    assert verdict == "human"
    assert transcriber.heard and transcriber.heard[0] > 0  # it was asked, just too slow


async def test_a_beep_is_a_voicemail_and_every_frame_heard_is_handed_on() -> None:
    audio = silence(0.2) + tone_pcm(1000, 0.4) + silence(0.4)
    connection = _line(audio)
    verdict, replayed = await detect_answered_by(connection)
    assert verdict == "voicemail" and replayed.answered_by == "voicemail"
    connection.remote_hangup()
    frames = [frame async for frame in replayed.frames()]
    assert all(isinstance(frame, AudioFrame) for frame in frames)
    heard = b"".join(frame.pcm for frame in frames if isinstance(frame, AudioFrame))
    assert heard == audio[: len(heard)] and len(heard) == len(audio) - len(audio) % 320
