"""Speech engines by name: ``"espeak-ng:<voice>"`` and ``"piper:<voice>"`` (DESIGN §16).

A Voice names its engine; a call is spoken by its voice's engine, or the server's default
(CALLPLANE_VOICE_ENGINE) when it has no voice or its voice names none. ``Synthesizers`` builds
each engine once per process and shares it among calls: a Piper voice is a process holding a
model in memory, started on first use.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from functools import lru_cache

from callplane.speech.base import Synthesizer
from callplane.speech.piper import VOICE_NAME, PiperPool, PiperSynthesizer, find_voices
from callplane.speech.synthesis import EspeakSynthesizer

log = logging.getLogger("callplane.speech.engines")

DEFAULT_ENGINE = "espeak-ng:en-us"
ESPEAK = "espeak-ng"
PIPER = "piper"
_ESPEAK_VOICE = re.compile(r"[A-Za-z0-9_+-]{1,40}")


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


def parse_engine(name: str) -> tuple[str, str]:
    """``(program, voice)``; ValueError when the name is not of either form."""
    program, sep, voice = name.partition(":")
    if not sep or program not in (ESPEAK, PIPER):
        raise ValueError('an engine is "espeak-ng:<voice>" or "piper:<voice>"')
    pattern = _ESPEAK_VOICE if program == ESPEAK else VOICE_NAME
    if not pattern.fullmatch(voice):
        raise ValueError(f"not a {program} voice name: {voice!r}")
    return program, voice


def list_engines(piper_voices_dir: str | None) -> list[Engine]:
    """What is installed here: Piper voices first (they sound better), then espeak-ng's."""
    engines = [
        Engine(f"{PIPER}:{voice.name}", PIPER, voice.name, voice.source)
        for voice in sorted(find_voices(piper_voices_dir).values(), key=lambda v: v.name)
    ]
    engines += [
        Engine(f"{ESPEAK}:{voice}", ESPEAK, voice, "espeak-ng (Debian)")
        for voice in _espeak_voices()
    ]
    return engines


def check_engine(name: str, piper_voices_dir: str | None) -> None:
    """Raise ValueError (malformed) or EngineNotInstalled (not here)."""
    program, voice = parse_engine(name)
    if program == ESPEAK:
        if voice.lower() not in {v.lower() for v in _espeak_voices()}:
            raise EngineNotInstalled(
                f"{name} is not installed here (see `callplane voices engines`)"
            )
    elif voice not in find_voices(piper_voices_dir):
        raise EngineNotInstalled(f"{name} is not installed here (see `callplane voices engines`)")


@lru_cache(maxsize=1)
def _espeak_voices() -> tuple[str, ...]:
    program = shutil.which(ESPEAK)
    if program is None:
        return ()
    try:
        done = subprocess.run([program, "--voices"], capture_output=True, timeout=10, check=False)
    except subprocess.TimeoutExpired:
        return ()
    voices = []
    for line in done.stdout.decode(errors="replace").splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 2 and _ESPEAK_VOICE.fullmatch(fields[1]):
            voices.append(fields[1])
    return tuple(dict.fromkeys(voices))


class Synthesizers:
    """Each engine's synthesizer, built once per process and shared by every call."""

    def __init__(
        self, default_engine: str, piper_voices_dir: str | None, *, piper_processes: int = 1
    ) -> None:
        self.default_engine = default_engine
        self.piper_voices_dir = piper_voices_dir
        self.piper_processes = piper_processes
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
                except (ValueError, EngineNotInstalled):
                    log.warning("voice engine %s unavailable: speaking with espeak-ng", name)
                    synthesizer = self._espeak(DEFAULT_ENGINE)
                self._built[name] = synthesizer
            return synthesizer

    def close(self) -> None:
        with self._lock:
            built, self._built = list(self._built.values()), {}
        for synthesizer in built:
            if isinstance(synthesizer, PiperSynthesizer | PiperPool):
                synthesizer.close()

    def _build(self, name: str) -> Synthesizer:
        program, voice = parse_engine(name)
        if program == ESPEAK:
            return self._espeak(name)
        voices = find_voices(self.piper_voices_dir)
        if voice not in voices:
            raise EngineNotInstalled(name)
        fallback = self._espeak(DEFAULT_ENGINE)
        members = [
            PiperSynthesizer(voices[voice], fallback=fallback) for _ in range(self.piper_processes)
        ]
        piper = members[0] if len(members) == 1 else PiperPool(members)
        piper.start()
        return piper

    def _espeak(self, name: str) -> Synthesizer:
        # Called with the lock held: built directly, not through get().
        synthesizer = self._built.get(name)
        if synthesizer is None:
            synthesizer = EspeakSynthesizer(voice=parse_engine(name)[1])
            self._built[name] = synthesizer
        return synthesizer


def shared_synthesizers(
    default_engine: str, piper_voices_dir: str | None, *, piper_processes: int = 1
) -> Synthesizers:
    """One registry per process and configuration: the worker's calls and the API's previews
    share each Piper process rather than loading a voice twice."""
    key = (default_engine, piper_voices_dir, piper_processes)
    with _shared_lock:
        registry = _shared.get(key)
        if registry is None:
            registry = _shared[key] = Synthesizers(
                default_engine, piper_voices_dir, piper_processes=piper_processes
            )
        return registry


_shared: dict[tuple[str, str | None, int], Synthesizers] = {}
_shared_lock = threading.Lock()


def build_voices(
    default_engine: str, piper_voices_dir: str | None, *, piper_processes: int = 1
) -> Synthesizers:
    """The worker's voices, with the default engine ready before the first call (a Piper
    voice's model loads in about a second)."""
    voices = shared_synthesizers(default_engine, piper_voices_dir, piper_processes=piper_processes)
    voices.get(None)
    return voices
