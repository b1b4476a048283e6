"""16-bit mono PCM from one sample rate to another, band-limited.

Voices speak at their own rate (espeak-ng 22.05 kHz, Piper voices 16 or 22.05 kHz); a phone
line carries 8 kHz (G.711) and a browser 48 kHz (Opus). libswresample (through PyAV, in the
``callplane[speech]`` extra) filters below the lower Nyquist, so a voice's energy above 4 kHz
does not fold back into the telephone band as hiss. Without PyAV, the windowed-sinc resampler in
``speech.synthesis`` does the same job more slowly.
"""

from __future__ import annotations

import sys
from array import array


def resample_pcm(pcm: bytes, from_rate: int, to_rate: int) -> bytes:
    if from_rate == to_rate or not pcm:
        return pcm
    try:
        return _resample_av(pcm, from_rate, to_rate)
    except ImportError:
        from callplane.speech.synthesis import resample

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
