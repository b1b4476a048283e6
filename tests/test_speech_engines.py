"""Speech engines are a registry (speech/registry.py): a new engine is one module and one line;
a synthesizer may stream, and the speaker plays its first chunk before the sentence is whole."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import ClassVar

import pytest

from callplane.engine.conversation.reply import Reply
from callplane.engine.conversation.speaking import Speaker
from callplane.settings import Settings
from callplane.speech import registry
from callplane.speech.base import SpeechEngine, SynthesisFailed, Synthesizer
from callplane.speech.engines import (
    EngineNotInstalled,
    Synthesizers,
    check_engine,
    list_engines,
    parse_engine,
)
from callplane.speech.piper import PiperFailed
from callplane.speech.synthesis import EspeakSynthesizer, SynthesisError
from callplane.telephony.base import AudioFrame
from tests.fakes import FakeConnection


def _settings() -> Settings:
    return Settings(_env_file=None, voice_engine="espeak-ng:en-us")  # type: ignore[call-arg]


class Streaming(Synthesizer):
    """Speaks in two chunks; the second waits for ``more``."""

    def __init__(self) -> None:
        self.more = asyncio.Event()

    def synthesize(self, text: str, sample_rate: int) -> bytes:
        return b"\x01\x00" * 160

    async def stream(self, text: str, sample_rate: int) -> AsyncIterator[bytes]:
        yield b"\x01\x00" * 160
        await self.more.wait()
        yield b"\x02\x00" * 160


class Kokoroish(SpeechEngine):
    program: ClassVar[str] = "kokoroish"
    voice_name: ClassVar[re.Pattern[str]] = re.compile(r"[a-z_]{1,20}")

    def voices(self, settings: Settings) -> dict[str, str]:
        return {"af_heart": "a test"}

    def build(self, voice: str, settings: Settings, fallback: Synthesizer) -> Synthesizer:
        if voice not in self.voices(settings):
            raise LookupError(voice)
        return Streaming()


def test_a_new_engine_is_one_module_and_one_registry_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.ENGINES, Kokoroish.program, Kokoroish())
    settings = _settings()
    assert parse_engine("kokoroish:af_heart") == ("kokoroish", "af_heart")
    check_engine("kokoroish:af_heart", settings)
    with pytest.raises(EngineNotInstalled):
        check_engine("kokoroish:nobody", settings)
    with pytest.raises(ValueError, match='"kokoroish:<voice>"'):
        parse_engine("festival:kal")
    assert "kokoroish:af_heart" in [e.name for e in list_engines(settings)]
    voices = Synthesizers(settings)
    assert isinstance(voices.get("kokoroish:af_heart"), Streaming)
    # Not installed: spoken by the fallback, never mute.
    assert isinstance(voices.get("kokoroish:nobody"), EspeakSynthesizer)


def test_every_engines_failure_is_a_synthesis_failure() -> None:
    assert issubclass(SynthesisError, SynthesisFailed) and issubclass(PiperFailed, SynthesisFailed)


async def test_a_streaming_engine_is_heard_before_its_sentence_is_whole() -> None:
    connection = FakeConnection()
    synthesizer = Streaming()
    speaker = Speaker(connection, synthesizer)
    reply = Reply()
    saying = asyncio.create_task(speaker.say(reply, "A sentence still being made."))
    async with asyncio.timeout(5):
        while not connection.played:  # noqa: ASYNC110 (the fake connection has no event to wait on)
            await asyncio.sleep(0.001)
    assert not saying.done()
    assert reply.first_media_at is not None
    assert reply.sentences == [(reply.sentences[0][0], "A sentence still being made.")]
    synthesizer.more.set()
    await saying
    frames = [f for _, f in connection.played if isinstance(f, AudioFrame)]
    assert len(frames) == 2 and len(reply.sentences) == 1


async def test_the_default_stream_is_one_chunk_of_the_synthesized_sentence() -> None:
    class Plain(Synthesizer):
        def synthesize(self, text: str, sample_rate: int) -> bytes:
            return text.encode()

    assert [c async for c in Plain().stream("Hello there.", 8000)] == [b"Hello there."]
