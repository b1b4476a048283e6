"""A recording's redacted stretches covered with a 1 kHz tone, before it is stored.

The call's recording is a 16-bit WAV with one channel per side (the agent's first). Each
stretch names its channel and its seconds; it is widened on both sides, since a line's times on
the call's clock and its place in the recording differ by the jitter of the network and of
voice-activity detection (which reports speech a little after it began, later still on a busy
worker), and a value left audible is the one mistake redaction must not make.
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
#: Seconds added before and after each stretch.
MARGIN_BEFORE = 1.0
MARGIN_AFTER = 0.5


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
        first = max(int((start - MARGIN_BEFORE) * rate), 0)
        last = min(int((end + MARGIN_AFTER) * rate), length)
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
