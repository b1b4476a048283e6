"""Speech engines by name, ``"<program>:<voice>"`` (``espeak-ng:en-us``, ``piper:en_US-joe-medium``;
the programs are ``registry.py``'s).

A Voice names its engine; a call is spoken by its voice's engine, or the server's default
(CALLPLANE_VOICE_ENGINE) when it has no voice or its voice names none. ``Synthesizers`` builds
each engine once per process and shares it among calls: a Piper voice is a process holding a
model in memory, started on first use. Every engine's settings come from the one ``Settings``
given here (the runtime's, as ``SpeechSettings``), read by the engine's own module.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from callplane.speech.base import SpeechEngine, SpeechSettings, Synthesizer
from callplane.speech.models import primary
from callplane.speech.registry import ENGINES

log = logging.getLogger("callplane.speech.engines")

#: What speaks when the asked engine cannot (a call is never left mute).
DEFAULT_ENGINE = "espeak-ng:en-us"


class EngineNotInstalled(LookupError):
    """The engine's program or voice is not installed on this server."""


@dataclass(frozen=True)
class Engine:
    #: ``"<program>:<voice>"``, as a Voice's ``engine`` holds it.
    name: str
    program: str
    voice: str
    #: Where the voice comes from (a directory, a package, the Debian program).
    source: str
    #: The language tag it speaks (``es-419``), when its name says it.
    language: str | None = None


def _kind(name: str) -> tuple[SpeechEngine, str]:
    program, sep, voice = name.partition(":")
    kind = ENGINES.get(program) if sep else None
    if kind is None:
        forms = " or ".join(f'"{p}:<voice>"' for p in sorted(ENGINES))
        raise ValueError(f"an engine is {forms}")
    if not kind.voice_name.fullmatch(voice):
        raise ValueError(f"not a {program} voice name: {voice!r}")
    return kind, voice


def parse_engine(name: str) -> tuple[str, str]:
    """``(program, voice)``; ValueError when the name is of no engine's form."""
    kind, voice = _kind(name)
    return kind.program, voice


def list_engines(settings: SpeechSettings, language: str | None = None) -> list[Engine]:
    """What is installed here, engine by engine in the registry's order, voices by name;
    with ``language`` (``es``, ``es-MX``), only voices of that language (any region of it)."""
    engines = [
        Engine(f"{kind.program}:{voice}", kind.program, voice, source, kind.language_of(voice))
        for kind in ENGINES.values()
        for voice, source in sorted(kind.voices(settings).items())
    ]
    if language is None:
        return engines
    code = primary(language)
    return [e for e in engines if e.language is not None and primary(e.language) == code]


def voice_for_language(language: str, settings: SpeechSettings) -> str | None:
    """The engine that speaks ``language`` here: the first installed Piper voice of it (the
    registry's order puts Piper first), preferring the exact region, else espeak-ng's; None for
    English and ``auto`` (the server's default voice, CALLPLANE_VOICE_ENGINE) or a language
    nothing here speaks."""
    if primary(language) in (None, "en"):
        return None
    wanted = language.casefold()
    # The exact tag first, then the language's home region (fr-fr before fr-be).
    home = f"{primary(language)}-{primary(language)}"

    def rank(engine: Engine) -> tuple[int, bool, bool]:
        tag = (engine.language or "").casefold()
        return (programs.index(engine.program), tag != wanted, tag != home)

    programs = list(ENGINES)
    engines = sorted(list_engines(settings, language), key=rank)
    return engines[0].name if engines else None


def check_engine(name: str, settings: SpeechSettings) -> None:
    """Raise ValueError (malformed) or EngineNotInstalled (not here)."""
    kind, voice = _kind(name)
    if not kind.installed(voice, settings):
        raise EngineNotInstalled(f"{name} is not installed here (see `callplane voices engines`)")


def spoken_default(settings: SpeechSettings) -> str:
    """The engine a call without a voice of its own really speaks with: the configured default
    (Piper's joe voice unless set), or espeak-ng where that is not installed here."""
    try:
        check_engine(settings.voice_engine, settings)
    except (ValueError, EngineNotInstalled):
        return DEFAULT_ENGINE
    return settings.voice_engine


class Synthesizers:
    """Each engine's synthesizer, built once per process and shared by every call."""

    def __init__(self, settings: SpeechSettings) -> None:
        self.settings = settings
        self.default_engine = settings.voice_engine
        self._lock = threading.Lock()
        self._built: dict[str, Synthesizer] = {}

    def get(self, engine: str | None) -> Synthesizer:
        """The engine's synthesizer; an engine no longer installed falls back to espeak-ng (a
        call is never left mute because a voice file was removed)."""
        name = engine or self.default_engine
        with self._lock:
            synthesizer = self._built.get(name)
            if synthesizer is None:
                try:
                    synthesizer = self._build(name)
                except (ValueError, LookupError):
                    log.warning("voice engine %s unavailable: speaking with espeak-ng", name)
                    synthesizer = self._fallback()
                self._built[name] = synthesizer
            return synthesizer

    def close(self) -> None:
        with self._lock:
            built, self._built = list(self._built.values()), {}
        for synthesizer in {id(s): s for s in built}.values():
            synthesizer.close()

    def _build(self, name: str) -> Synthesizer:
        if name == DEFAULT_ENGINE:
            return self._fallback()
        kind, voice = _kind(name)
        return kind.build(voice, self.settings, fallback=self._fallback())

    def _fallback(self) -> Synthesizer:
        # Called with the lock held: built directly, not through get().
        synthesizer = self._built.get(DEFAULT_ENGINE)
        if synthesizer is None:
            kind, voice = _kind(DEFAULT_ENGINE)
            synthesizer = kind.build(voice, self.settings, fallback=_Mute())
            self._built[DEFAULT_ENGINE] = synthesizer
        return synthesizer


class _Mute(Synthesizer):
    """The fallback's own fallback: nothing (it is the last resort)."""

    def synthesize(self, text: str, sample_rate: int) -> bytes:
        return b""


def _key(settings: SpeechSettings) -> tuple[object, ...]:
    return (settings.voice_engine, *(kind.options(settings) for kind in ENGINES.values()))


def shared_synthesizers(settings: SpeechSettings) -> Synthesizers:
    """One registry per process and configuration: the worker's calls and the API's previews
    share each Piper process rather than loading a voice twice."""
    key = _key(settings)
    with _shared_lock:
        registry = _shared.get(key)
        if registry is None:
            registry = _shared[key] = Synthesizers(settings)
        return registry


_shared: dict[tuple[object, ...], Synthesizers] = {}
_shared_lock = threading.Lock()


def build_voices(settings: SpeechSettings) -> Synthesizers:
    """The worker's voices, with the default engine ready before the first call (a Piper
    voice's model loads in about a second)."""
    voices = shared_synthesizers(settings)
    voices.get(None)
    return voices
