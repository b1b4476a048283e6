"""Local speech synthesis: the agent's lines spoken by espeak-ng.

espeak-ng is GPL, so callplane never links it: it runs the Debian program (``espeak-ng``, from
``scripts/apt-packages.txt``) as a separate process per line, the text on its standard input
(never on the command line, so no text can become an option), with a timeout. Its 22.05 kHz
output is resampled, band-limited (``speech.resampling``), to whatever rate the caller asks (8 kHz
for a phone, 48 kHz for Opus).
"""

from __future__ import annotations

import io
import math
import operator
import re
import shutil
import subprocess
import wave
from array import array
from functools import lru_cache
from typing import Any

from callplane.speech.base import Synthesizer
from callplane.speech.resampling import resample_pcm

#: Longer lines are refused: one agent turn, not a book (and a bound on the process's run time).
MAX_TEXT_CHARS = 4000
_VOICE = re.compile(r"[A-Za-z0-9_+-]{1,40}")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class SynthesisError(RuntimeError):
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


# -- band-limited resampling (windowed sinc, a table of fractional phases) -----------------

_HALF_TAPS = 16
_PHASES = 128


@lru_cache(maxsize=8)
def _kernel(cutoff: float) -> tuple[tuple[float, ...], ...]:
    """Low-pass weights for each fractional position; ``cutoff`` in cycles per input sample."""
    table = []
    for phase in range(_PHASES):
        fraction = phase / _PHASES
        weights = []
        for k in range(-_HALF_TAPS + 1, _HALF_TAPS + 1):
            t = k - fraction
            sinc = 2 * cutoff if t == 0 else math.sin(2 * math.pi * cutoff * t) / (math.pi * t)
            window = 0.5 + 0.5 * math.cos(math.pi * t / _HALF_TAPS)  # Hann
            weights.append(sinc * window)
        total = sum(weights)
        table.append(tuple(w / total for w in weights))
    return tuple(table)


def resample(samples: array[int], from_rate: int, to_rate: int) -> array[int]:
    """16-bit mono samples from one rate to another, filtered below the lower Nyquist."""
    if from_rate == to_rate or not samples:
        return array("h", samples)
    # 0.45 rather than 0.5 leaves the filter's transition band below the new Nyquist.
    kernel = _kernel(0.45 * min(1.0, to_rate / from_rate))
    try:
        return _resample_numpy(samples, from_rate, to_rate, kernel)
    except ImportError:
        return _resample_python(samples, from_rate, to_rate, kernel)


def _resample_numpy(
    samples: array[int], from_rate: int, to_rate: int, kernel: tuple[tuple[float, ...], ...]
) -> array[int]:
    """The same filter as ``_resample_python``, vectorised (numpy is in the speech extra).

    The agent's first sentence is synthesised on the response-latency path: in pure Python this
    loop cost ~30 ms a sentence (of a ~650 ms turn) and held the GIL, so the event loop of every
    other call on the worker stalled meanwhile; numpy takes a few milliseconds, mostly without it.
    """
    import numpy as np

    table = _kernel_table(kernel)
    padded = np.concatenate(
        [np.zeros(_HALF_TAPS), np.frombuffer(samples, dtype=np.int16), np.zeros(_HALF_TAPS)]
    )
    step = from_rate / to_rate
    position = np.arange(int(len(samples) / step), dtype=np.float64) * step
    index = position.astype(np.int64)
    phase = np.round((position - index) * _PHASES).astype(np.int64)
    wrapped = phase == _PHASES
    index[wrapped] += 1
    phase[wrapped] = 0
    taps = index[:, None] + 1 + np.arange(2 * _HALF_TAPS)
    values = np.einsum("ij,ij->i", table[phase], padded[taps])
    out = np.clip(np.round(values), -32768, 32767).astype(np.int16)
    return array("h", out.tobytes())


@lru_cache(maxsize=8)
def _kernel_table(kernel: tuple[tuple[float, ...], ...]) -> Any:
    import numpy as np

    return np.asarray(kernel, dtype=np.float64)


def _resample_python(
    samples: array[int], from_rate: int, to_rate: int, kernel: tuple[tuple[float, ...], ...]
) -> array[int]:
    padded = [0] * _HALF_TAPS + list(samples) + [0] * _HALF_TAPS
    step = from_rate / to_rate
    out = array("h")
    mul = operator.mul
    for n in range(int(len(samples) / step)):
        position = n * step
        index = int(position)
        phase = round((position - index) * _PHASES)
        if phase == _PHASES:
            index, phase = index + 1, 0
        start = index + 1  # padded[start + j] is samples[index - HALF + 1 + j]
        value = sum(map(mul, kernel[phase], padded[start : start + 2 * _HALF_TAPS]))
        out.append(max(-32768, min(32767, round(value))))
    return out


def build_synthesizer() -> Synthesizer:
    """The engine's local synthesizer; fails now, not mid-call, when espeak-ng is missing."""
    if shutil.which("espeak-ng") is None:
        raise SynthesisError("espeak-ng is not installed (Debian package espeak-ng)")
    return EspeakSynthesizer()
