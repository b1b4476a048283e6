"""Audio made at test time: espeak-ng speech, re-encoded with PyAV, and the shared transcriber.

Nothing binary is committed: every clip is synthesised when a test asks for it (and cached for
the session, since the same sentences are used by several tests).
"""

from __future__ import annotations

import functools
import io
import shutil
import subprocess
import tempfile
import wave
from pathlib import Path
from typing import Any

import pytest

np = pytest.importorskip("numpy", reason="needs the speech extra (make install)")
av = pytest.importorskip("av", reason="needs the speech extra (make install)")

from callplane.settings import Settings  # noqa: E402
from callplane.speech.transcriber import WhisperTranscriber, shared_transcriber  # noqa: E402

ESPEAK_RATE = 22_050


def transcriber() -> WhisperTranscriber:
    """One model per test process (loading it is the expensive part)."""
    return shared_transcriber(Settings(_env_file=None))  # type: ignore[call-arg]


@functools.cache
def speech(text: str) -> Any:
    """``text`` spoken by espeak-ng: int16 mono samples at ESPEAK_RATE."""
    if shutil.which("espeak-ng") is None:
        pytest.fail("espeak-ng is not installed (scripts/apt-packages.txt; make install)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "speech.wav"
        subprocess.run(["espeak-ng", "-s", "150", "-w", str(path), text], check=True)
        with wave.open(str(path)) as w:
            assert w.getframerate() == ESPEAK_RATE and w.getnchannels() == 1
            data = w.readframes(w.getnframes())
    return np.frombuffer(data, dtype="<i2").copy()


def wav_bytes(samples: Any, rate: int = ESPEAK_RATE) -> bytes:
    """16-bit PCM WAV; ``samples`` is (n,) for mono or (n, 2) for stereo."""
    samples = np.asarray(samples, dtype="<i2")
    channels = 1 if samples.ndim == 1 else samples.shape[1]
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.tobytes())
    return out.getvalue()


_CODECS = {"mp3": ("mp3", "libmp3lame"), "flac": ("flac", "flac"), "ogg": ("ogg", "libopus")}


def encoded(samples: Any, fmt: str, rate: int = ESPEAK_RATE) -> bytes:
    """Mono int16 samples encoded as mp3, flac or ogg (Opus) with PyAV's FFmpeg."""
    container_format, codec = _CODECS[fmt]
    if codec == "libopus" and rate not in (8000, 12000, 16000, 24000, 48000):
        from callplane.speech.transcriber import resample

        floats = resample(np.asarray(samples, dtype=np.float32) / 32768, rate, 16000)
        samples, rate = (np.clip(floats, -1, 1) * 32767).astype(np.int16), 16000
    out = io.BytesIO()
    with av.open(out, mode="w", format=container_format) as container:
        stream = container.add_stream(codec, rate=rate, layout="mono")
        frame = av.AudioFrame.from_ndarray(
            np.asarray(samples, dtype=np.int16).reshape(1, -1), format="s16", layout="mono"
        )
        frame.sample_rate = rate
        for packet in stream.encode(frame):
            container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


def silence(seconds: float, rate: int = ESPEAK_RATE) -> Any:
    return np.zeros(int(seconds * rate), dtype=np.int16)


def words_of(text: str) -> set[str]:
    return {w.strip(".,!?;:\"'").lower() for w in text.split()}
