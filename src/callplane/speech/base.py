"""The speech interfaces the engine and the ingestion pipeline depend on.

Implementations are chosen by settings and built once per process; heavy ones (faster-whisper)
live in the ``callplane[speech]`` extra and are imported only when built, so the light install
still serves the API.

Audio crosses these interfaces as 16-bit signed little-endian mono PCM with its sample rate
stated; an implementation resamples to what it needs.
"""

from __future__ import annotations

import abc
import re
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

from callplane.speech import executors


@dataclass(frozen=True)
class Word:
    """One recognised word with its own times (seconds from the start of the audio given)."""

    text: str
    start: float
    end: float
    #: 0..1, the recogniser's probability for the word.
    confidence: float


@dataclass(frozen=True)
class Segment:
    """A stretch of recognised speech; times in seconds from the start of the audio given."""

    text: str
    start: float
    end: float
    #: 0..1, the recogniser's own estimate (e.g. exp of the mean token log-probability).
    confidence: float
    #: The segment's words with their times, when the recogniser provides them (optional:
    #: redaction of spoken numbers needs them; other callers may ignore them).
    words: tuple[Word, ...] = ()
    #: The language heard (ISO 639-1, ``"es"``) and how sure the recogniser is of it, 0..1;
    #: None when it was not identified (an English-only model, or a language fixed in advance).
    language: str | None = None
    language_probability: float | None = None


class Transcriber(abc.ABC):
    @abc.abstractmethod
    def transcribe(
        self,
        pcm: bytes,
        sample_rate: int,
        *,
        hints: Sequence[str] = (),
        abandoned: threading.Event | None = None,
    ) -> list[Segment]:
        """Recognise speech. Blocking and CPU-bound: callers run it off the event loop.

        ``hints`` are words and phrases likely to be said (a call's ``keyterms``).
        ``abandoned``, once set, says the text is no longer wanted (the caller went on talking
        after a pause's guess): an implementation may stop early and return anything.
        """


class SynthesisFailed(RuntimeError):
    """An engine could not speak a line: its program is missing, failed or took too long. The
    server's trouble, not the text's (a preview answers 503; a call misses the sentence). Each
    engine's own error derives from it."""


class Synthesizer(abc.ABC):
    @abc.abstractmethod
    def synthesize(self, text: str, sample_rate: int) -> bytes:
        """Speak ``text``; PCM at ``sample_rate``. Blocking: callers run it off the event loop."""

    async def stream(self, text: str, sample_rate: int) -> AsyncIterator[bytes]:
        """``text`` (a sentence, as the speaker gives them) as PCM chunks, each played as soon
        as it arrives. This default is one chunk, ``synthesize`` run off the event loop; an
        engine that streams overrides it to start speaking before the sentence is whole."""
        yield await executors.run("synthesis", self.synthesize, text, sample_rate)

    def close(self) -> None:
        """Let go of what the engine holds (a child process); most hold nothing."""
        return None


class SpeechSettings(Protocol):
    """What engines read of the server's settings (``callplane.settings.Settings`` has it; speech
    stays below the settings module, which checks CALLPLANE_VOICE_ENGINE with ``engines``)."""

    @property
    def voice_engine(self) -> str: ...
    @property
    def piper_voices_dir(self) -> str | None: ...
    @property
    def piper_processes(self) -> int: ...


class SpeechEngine(abc.ABC):
    """A kind of engine a Voice may name as ``"<program>:<voice>"`` (``registry.py``). Its
    settings are read from ``SpeechSettings`` here, in its own module, so no engine's options travel
    through the callers."""

    #: The name's part before the colon.
    program: ClassVar[str]
    #: What a voice name of this engine looks like.
    voice_name: ClassVar[re.Pattern[str]]

    @abc.abstractmethod
    def voices(self, settings: SpeechSettings) -> dict[str, str]:
        """The voices installed here -> where each comes from (a directory, a package)."""

    def options(self, settings: SpeechSettings) -> tuple[object, ...]:
        """The settings this engine reads (engines built under other values are not shared)."""
        return ()

    def installed(self, voice: str, settings: SpeechSettings) -> bool:
        return voice in self.voices(settings)

    def language_of(self, voice: str) -> str | None:
        """The language tag the voice speaks (``es-419``), when its name says it."""
        return None

    @abc.abstractmethod
    def build(self, voice: str, settings: SpeechSettings, fallback: Synthesizer) -> Synthesizer:
        """The voice's synthesizer, ready to speak; ``fallback`` speaks a line this one fails
        on. Raise ``LookupError`` when the voice is not installed."""
