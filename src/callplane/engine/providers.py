"""A worker's providers, built once per process: the transcriber (live recognition), the
synthesizers (one per voice, on first use) and the brain. The conversation asks this, and only
this, for them; ``build_providers`` is the one place that knows which implementations exist.
"""

from __future__ import annotations

import gc
import logging
import threading
from dataclasses import dataclass, field

from callplane.brain import Brain, build_brain
from callplane.settings import Settings
from callplane.speech.base import Synthesizer, Transcriber

log = logging.getLogger("callplane.engine.providers")

#: The voice of a call that names none (``engine:name``, as a Voice's ``engine``).
DEFAULT_VOICE = "espeak-ng:en-us"


@dataclass
class Providers:
    transcriber: Transcriber | None = None
    brain: Brain | None = None
    #: The synthesizer of every voice asked for so far (None: that voice cannot speak here).
    synthesizers: dict[str, Synthesizer | None] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def synthesizer(self, voice: str | None = None) -> Synthesizer | None:
        """The synthesizer of ``voice`` (``"espeak-ng:en-us"``), built on first use; a voice
        this machine cannot speak falls back to the default one."""
        voice = voice or DEFAULT_VOICE
        with self._lock:
            if voice not in self.synthesizers:
                self.synthesizers[voice] = _synthesizer(voice)
            found = self.synthesizers[voice]
        if found is None and voice != DEFAULT_VOICE:
            return self.synthesizer(DEFAULT_VOICE)
        return found

    async def aclose(self) -> None:
        if self.brain is not None:
            await self.brain.aclose()


def build_providers(settings: Settings) -> Providers:
    # Whisper takes a second or two and memory to load: only a network with audio needs it.
    audio = settings.telephony == "sip"
    providers = Providers(
        transcriber=_live_transcriber(settings) if audio else None,
        brain=build_brain(settings),
    )
    providers.synthesizer()  # fails now, in the log, rather than on the first call
    # Everything loaded so far (the app, SQLAlchemy, the models) lives as long as the process:
    # out of the collector's sight, a full collection stops being a ~200 ms pause of every call
    # on the worker (measured here with the app loaded: 195 ms before, well under 1 ms after).
    # Once per process: a later freeze would also pin whatever cyclic garbage exists then.
    global _frozen
    if not _frozen:
        gc.freeze()
        _frozen = True
    return providers


_frozen = False


def _synthesizer(voice: str) -> Synthesizer | None:
    """Local text-to-speech through ``speech.synthesis``'s public builders; without it the
    agent cannot be heard (it still listens, and its lines are still in the transcript)."""
    engine, _, name = voice.partition(":")
    try:
        from callplane.speech.synthesis import EspeakSynthesizer, build_synthesizer

        if voice == DEFAULT_VOICE:
            return build_synthesizer()
        if engine == "espeak-ng" and name:
            build_synthesizer()  # the same check: espeak-ng is installed
            return EspeakSynthesizer(voice=name)
    except Exception:
        log.warning("speech synthesis unavailable for %s", voice, exc_info=True)
        return None
    log.warning("no synthesizer for %s here; the default voice speaks instead", voice)
    return None


def _live_transcriber(settings: Settings) -> Transcriber | None:
    """Whisper, loaded now so the first call does not wait for it; without the speech extra
    the agent cannot hear the caller (it still speaks and records)."""
    try:
        from callplane.speech.transcriber import shared_transcriber

        return shared_transcriber(settings, "live")
    except Exception:
        log.warning("speech recognition unavailable: the agent will not hear", exc_info=True)
        return None
