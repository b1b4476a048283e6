"""Has the caller finished their turn? Asked of the sound of their voice, not of its words.

A text guess cannot tell "That works for me," from "That works for me." — Whisper hears both
as a finished sentence — but the voice can: a falling pitch and a lengthened last syllable end
a turn, a held or rising one goes on. The smart-turn v3.2 model (an 8 M parameter Whisper-tiny
encoder with a classifier head, trained on 23 languages; BSD-2-Clause) hears exactly that. It
ships inside the ``pipecat-ai`` wheel (``requirements/turn-model.txt``, pinned by hash):
``make install`` takes the ONNX file out of that wheel into the venv
(``scripts/install_turn_model.py``), and callplane runs it with its own onnxruntime. pipecat is
never installed nor imported.

Input, as the model was trained: the last 8 s of the turn at 16 kHz, zero-padded in front,
normalised to zero mean and unit variance, as Whisper's 80-band log-mel spectrogram
(faster-whisper's feature extractor computes the same one). Output: the probability that the
turn is complete.

Pure: PCM in, a probability out. One scoring costs ~10 ms of one core (``bench/endpointing.py``).
"""

from __future__ import annotations

import hashlib
import sys
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from callplane.speech.resampling import resample_pcm

MODEL_RATE = 16_000
WINDOW_SECONDS = 8
#: Where ``make install`` puts the model, and its SHA-256 (checked again when loaded: the
#: wheel's hash pins the download, this pins the one file callplane runs).
MODEL_PATH = Path(sys.prefix) / "share" / "callplane" / "smart-turn" / "smart-turn-v3.2-cpu.onnx"
MODEL_SHA256 = "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f"
#: A turn is complete when the model says so with at least this probability.
COMPLETE = 0.5


class TurnModelMissing(RuntimeError):
    """The model is not installed (or not the file callplane pins): endpointing falls back."""


def installed_model_path() -> Path:
    """Where the pinned model file is, or ``TurnModelMissing`` saying why it cannot be used."""
    if not MODEL_PATH.is_file():
        raise TurnModelMissing(
            f"the end-of-turn model is not installed at {MODEL_PATH} (make install puts it there)"
        )
    return MODEL_PATH


class TurnModel:
    """One ONNX session, shared by every call of the process: the weights are read-only and
    onnxruntime's ``run`` is safe from several threads at once."""

    def __init__(self, path: Path) -> None:
        import onnxruntime as ort
        from faster_whisper.feature_extractor import FeatureExtractor

        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != MODEL_SHA256:
            raise TurnModelMissing(f"{path} is not the pinned end-of-turn model (sha256 {digest})")
        options = ort.SessionOptions()
        # One thread: a worker runs many calls, and a scoring that takes both cores from the
        # recogniser saves nothing overall.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._features = FeatureExtractor(feature_size=80, chunk_length=WINDOW_SECONDS)
        # The extractor keeps its window length on itself; one scoring at a time reads it.
        self._lock = threading.Lock()

    def probability(self, pcm: bytes, rate: int) -> float:
        """How likely the turn in ``pcm`` (16-bit mono at ``rate``) is finished, 0 to 1."""
        import numpy as np

        audio = np.frombuffer(resample_pcm(pcm, rate, MODEL_RATE), dtype="<i2")
        samples = audio.astype(np.float32) / 32768.0
        window = MODEL_RATE * WINDOW_SECONDS
        samples = samples[-window:]
        if samples.size < window:
            samples = np.pad(samples, (window - samples.size, 0))
        samples = (samples - samples.mean()) / np.sqrt(samples.var() + 1e-7)
        with self._lock:
            features = self._features(samples, padding=0)
        batch: Any = features[np.newaxis, :, : WINDOW_SECONDS * 100].astype(np.float32)
        (scores,) = self._session.run(None, {"input_features": batch})
        return float(np.asarray(scores).reshape(-1)[0])

    def is_complete(self, pcm: bytes, rate: int) -> bool:
        return self.probability(pcm, rate) >= COMPLETE


@lru_cache(maxsize=1)
def shared_model() -> TurnModel:
    """The process's model, loaded on first use (``TurnModelMissing`` when it cannot be)."""
    return TurnModel(installed_model_path())
