"""Test audio made on the spot: espeak-ng speech and noise as 8 kHz 16-bit mono PCM."""

from __future__ import annotations

import io
import random
import subprocess
import wave
from array import array

RATE = 8000


def spoken(text: str) -> bytes:
    """``text`` spoken by espeak-ng, resampled to the telephone rate (linear interpolation),
    without espeak's trailing silence (so the audio ends where the speaker stops)."""
    wav = subprocess.run(
        ["espeak-ng", "--stdout", text], check=True, capture_output=True, timeout=30
    ).stdout
    with wave.open(io.BytesIO(wav)) as reader:
        source_rate = reader.getframerate()
        source = array("h", reader.readframes(reader.getnframes()))
    step = source_rate / RATE
    out = array("h")
    for n in range(int(len(source) / step) - 1):
        position = n * step
        i = int(position)
        frac = position - i
        out.append(int(source[i] * (1 - frac) + source[i + 1] * frac))
    end = len(out)
    while end and abs(out[end - 1]) < 300:
        end -= 1
    return out[:end].tobytes()


def silence(seconds: float) -> bytes:
    return bytes(int(RATE * seconds) * 2)


def noise(seconds: float, amplitude: float, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    return array("h", [int(rng.gauss(0, amplitude)) for _ in range(int(RATE * seconds))]).tobytes()


def mixed(pcm: bytes, amplitude: float, seed: int = 7) -> bytes:
    """``pcm`` with white noise added throughout, as on a noisy line."""
    rng = random.Random(seed)
    samples = array("h", pcm)
    return array(
        "h", [max(-32768, min(32767, x + int(rng.gauss(0, amplitude)))) for x in samples]
    ).tobytes()
