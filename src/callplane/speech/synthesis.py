"""Local speech synthesis: the agent's lines spoken by espeak-ng.

espeak-ng is GPL, so callplane never links it: it runs the Debian program (``espeak-ng``, from
``scripts/apt-packages.txt``) as a separate process per line, the text on its standard input
(never on the command line, so no text can become an option), with a timeout. Its 22.05 kHz
output is resampled, band-limited (``speech.resampling``), to whatever rate the caller asks (8 kHz
for a phone, 48 kHz for Opus).
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import wave
from functools import lru_cache
from typing import ClassVar

from callplane.speech.base import SpeechEngine, SpeechSettings, SynthesisFailed, Synthesizer
from callplane.speech.resampling import resample_pcm

#: Longer lines are refused: one agent turn, not a book (and a bound on the process's run time).
MAX_TEXT_CHARS = 4000
_VOICE = re.compile(r"[A-Za-z0-9_+-]{1,40}")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class SynthesisError(SynthesisFailed):
    """espeak-ng is missing, failed or took too long."""


class EspeakSynthesizer(Synthesizer):
    def __init__(
        self,
        *,
        voice: str = "en-us",
        words_per_minute: int = 160,
        timeout_seconds: float = 30.0,
        executable: str = "espeak-ng",
    ) -> None:
        if not _VOICE.fullmatch(voice):
            raise ValueError(f"not an espeak-ng voice name: {voice!r}")
        if not 80 <= words_per_minute <= 450:
            raise ValueError("words_per_minute must be within 80-450 (espeak-ng's range)")
        self.voice = voice
        self.words_per_minute = words_per_minute
        self.timeout_seconds = timeout_seconds
        self.executable = executable

    def synthesize(self, text: str, sample_rate: int) -> bytes:
        text = _CONTROL.sub(" ", text).strip()
        if not text:
            return b""
        if len(text) > MAX_TEXT_CHARS:
            raise ValueError(f"a line to speak is at most {MAX_TEXT_CHARS} characters")
        program = shutil.which(self.executable)
        if program is None:
            raise SynthesisError(f"{self.executable} is not installed (Debian package espeak-ng)")
        args = [program, "--stdout", "-v", self.voice, "-s", str(self.words_per_minute)]
        try:
            done = subprocess.run(
                args,
                input=text.encode(),
                capture_output=True,
                timeout=self.timeout_seconds,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise SynthesisError(f"espeak-ng took over {self.timeout_seconds:g} s") from exc
        if done.returncode != 0 or not done.stdout:
            detail = done.stderr.decode(errors="replace").strip()[:200]
            raise SynthesisError(f"espeak-ng failed ({done.returncode}): {detail}")
        with wave.open(io.BytesIO(done.stdout)) as wav:
            if wav.getnchannels() != 1 or wav.getsampwidth() != 2:
                raise SynthesisError("espeak-ng produced an unexpected audio format")
            rate = wav.getframerate()
            pcm = wav.readframes(wav.getnframes())
        return resample_pcm(pcm, rate, sample_rate)


def build_synthesizer() -> Synthesizer:
    """The engine's local synthesizer; fails now, not mid-call, when espeak-ng is missing."""
    if shutil.which("espeak-ng") is None:
        raise SynthesisError("espeak-ng is not installed (Debian package espeak-ng)")
    return EspeakSynthesizer()


class EspeakEngine(SpeechEngine):
    """``espeak-ng:<voice>``: the Debian program's voices; no settings."""

    program: ClassVar[str] = "espeak-ng"
    voice_name: ClassVar[re.Pattern[str]] = _VOICE

    def voices(self, settings: SpeechSettings) -> dict[str, str]:
        return dict.fromkeys(_espeak_voices(), "espeak-ng (Debian)")

    def installed(self, voice: str, settings: SpeechSettings) -> bool:
        return voice.lower() in {v.lower() for v in _espeak_voices()}

    def language_of(self, voice: str) -> str | None:
        # espeak-ng names its voices by their language tag.
        return voice

    def build(self, voice: str, settings: SpeechSettings, fallback: Synthesizer) -> Synthesizer:
        # Not checked against the list: a voice espeak-ng lacks fails on its first line, and
        # the caller hears the fallback's line instead.
        return EspeakSynthesizer(voice=voice)


@lru_cache(maxsize=1)
def _espeak_voices() -> tuple[str, ...]:
    program = shutil.which("espeak-ng")
    if program is None:
        return ()
    try:
        done = subprocess.run([program, "--voices"], capture_output=True, timeout=10, check=False)
    except subprocess.TimeoutExpired:
        return ()
    voices = []
    for line in done.stdout.decode(errors="replace").splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 2 and _VOICE.fullmatch(fields[1]):
            voices.append(fields[1])
    return tuple(dict.fromkeys(voices))
