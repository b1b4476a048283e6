"""The speech interfaces the engine and the ingestion pipeline depend on.

Implementations are chosen by settings and built once per process; heavy ones (faster-whisper)
live in the ``callplane[speech]`` extra and are imported only when built, so the light install
still serves the API.

Audio crosses these interfaces as 16-bit signed little-endian mono PCM with its sample rate
stated; an implementation resamples to what it needs.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Sequence
from dataclasses import dataclass


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


class Synthesizer(abc.ABC):
    @abc.abstractmethod
    def synthesize(self, text: str, sample_rate: int) -> bytes:
        """Speak ``text``; PCM at ``sample_rate``. Blocking: callers run it off the event loop."""
