"""A worker's providers, built once per process: the transcriber (live recognition), the
voices (one synthesizer per engine, on first use: ``speech.engines``) and the brain. The
conversation asks this, and only this, for them; ``build_providers`` is the one place that
knows which implementations exist.
"""

from __future__ import annotations

import gc
import logging
from dataclasses import dataclass

from callplane.brain import Brain, build_brain
from callplane.settings import Settings
from callplane.speech.base import Synthesizer, Transcriber
from callplane.speech.engines import Synthesizers, build_voices

log = logging.getLogger("callplane.engine.providers")


@dataclass
class Providers:
    transcriber: Transcriber | None = None
    brain: Brain | None = None
    #: Every voice engine, by name (docs/voices.md), shared with the API's previews; None: this
    #: machine cannot speak (no espeak-ng).
    voices: Synthesizers | None = None

    def synthesizer(self, engine: str | None = None) -> Synthesizer | None:
        """The synthesizer of ``engine`` (``"piper:en_US-joe-medium"``; None: the server's
        default, CALLPLANE_VOICE_ENGINE); an engine not installed here speaks with espeak-ng.
        None when nothing can speak: the agent is not heard, its lines are still transcribed."""
        if self.voices is None:
            return None
        try:
            return self.voices.get(engine)
        except Exception:
            log.warning("speech synthesis unavailable for %s", engine, exc_info=True)
            return None

    async def aclose(self) -> None:
        if self.brain is not None:
            await self.brain.aclose()


def build_providers(settings: Settings) -> Providers:
    # Whisper takes a second or two and memory to load: only a network with audio needs it.
    audio = settings.telephony == "sip"
    providers = Providers(
        transcriber=_live_transcriber(settings) if audio else None,
        brain=build_brain(settings),
        voices=_voices(settings),
    )
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


def _voices(settings: Settings) -> Synthesizers | None:
    """The voices, with the default one ready now (a Piper model loads in about a second), so
    a failure shows in the log at start rather than on the first call."""
    try:
        return build_voices(settings)
    except Exception:
        log.warning("speech synthesis unavailable: the agent will not be heard", exc_info=True)
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
