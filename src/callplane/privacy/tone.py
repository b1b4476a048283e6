"""A recording's redacted stretches covered with a 1 kHz tone, before it is stored.

The call's recording is a 16-bit WAV with one channel per side (the agent's first). Each
stretch names its channel and its seconds, already widened by whoever placed it
(``engine/recording_redaction.py``).
"""

from __future__ import annotations

import array
import io
import math
import sys
import wave
from collections.abc import Sequence

TONE_HZ = 1000.0
#: About -12 dBFS: clearly a tone, not loud enough to hurt.
TONE_LEVEL = 0.25


def channel_pcm(data: bytes, channel: int, start: float, end: float) -> tuple[bytes, int]:
    """One channel's samples from ``start`` to ``end`` seconds of a 16-bit PCM WAV, as
    little-endian mono PCM, and its sample rate."""
    with wave.open(io.BytesIO(data), "rb") as wav:
        channels, width, rate = wav.getnchannels(), wav.getsampwidth(), wav.getframerate()
        first = min(max(int(start * rate), 0), wav.getnframes())
        wav.setpos(first)
        frames = wav.readframes(max(int(end * rate) - first, 0))
    if width != 2 or not 0 <= channel < channels:
        raise ValueError(f"no channel {channel} of 16-bit samples in this recording")
    samples = array.array("h", frames)[channel::channels]
    if sys.byteorder == "big":
        samples.byteswap()
    return samples.tobytes(), rate


def tone_wav(data: bytes, stretches: Sequence[tuple[int, float, float]]) -> bytes:
    """``data`` (a 16-bit PCM WAV) with each (channel, start, end) covered by the tone."""
    with wave.open(io.BytesIO(data), "rb") as wav:
        channels, width, rate = wav.getnchannels(), wav.getsampwidth(), wav.getframerate()
        frames = wav.readframes(wav.getnframes())
    if not stretches:
        return data
    if width != 2:
        # Never stored unredacted: the caller stores nothing when this fails.
        raise ValueError(f"a recording of {8 * width}-bit samples cannot be toned")
    samples = array.array("h", frames)
    if sys.byteorder == "big":
        samples.byteswap()
    length = len(samples) // channels
    for channel, start, end in stretches:
        if not 0 <= channel < channels:
            continue
        first = max(int(start * rate), 0)
        last = min(int(end * rate), length)
        for n in range(first, last):
            value = TONE_LEVEL * math.sin(2 * math.pi * TONE_HZ * n / rate)
            samples[n * channels + channel] = int(value * 32767)
    if sys.byteorder == "big":
        samples.byteswap()
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(channels)
        wav.setsampwidth(width)
        wav.setframerate(rate)
        wav.writeframes(samples.tobytes())
    return out.getvalue()
