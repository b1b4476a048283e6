"""16-bit mono PCM from one sample rate to another, band-limited.

Voices speak at their own rate (espeak-ng 22.05 kHz, Piper voices 16 or 22.05 kHz); a phone
line carries 8 kHz (G.711) and a browser 48 kHz (Opus). libswresample (through PyAV, in the
``callplane[speech]`` extra) filters below the lower Nyquist, so a voice's energy above 4 kHz
does not fold back into the telephone band as hiss. Without PyAV, the windowed-sinc resampler
below does the same job more slowly.
"""

from __future__ import annotations

import math
import operator
import sys
from array import array
from functools import lru_cache
from typing import Any


def resample_pcm(pcm: bytes, from_rate: int, to_rate: int) -> bytes:
    if from_rate == to_rate or not pcm:
        return pcm
    try:
        return _resample_av(pcm, from_rate, to_rate)
    except ImportError:
        samples = array("h", pcm)
        if sys.byteorder == "big":
            samples.byteswap()
        out = resample(samples, from_rate, to_rate)
        if sys.byteorder == "big":
            out.byteswap()
        return out.tobytes()


def _resample_av(pcm: bytes, from_rate: int, to_rate: int) -> bytes:
    import av
    import numpy as np

    # One resampler per call: it keeps filter state between frames, and lines are independent.
    resampler = av.AudioResampler(format="s16", layout="mono", rate=to_rate)
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2").reshape(1, -1)
    frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
    frame.sample_rate = from_rate
    # None flushes the filter's tail, so a line's last milliseconds are not lost.
    frames = [*resampler.resample(frame), *resampler.resample(None)]
    return b"".join(f.to_ndarray().astype("<i2").tobytes() for f in frames)


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
