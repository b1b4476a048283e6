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

Pure: PCM in, a probability out. What one scoring costs: ``bench/endpointing.py --cost``.
"""

from __future__ import annotations

import hashlib
import sys
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

        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != MODEL_SHA256:
            raise TurnModelMissing(f"{path} is not the pinned end-of-turn model (sha256 {digest})")
        options = ort.SessionOptions()
        # One thread: a worker runs many calls, and a scoring that takes both cores from the
        # recogniser saves nothing overall. Sequential, fully optimised graph: basic
        # optimisation alone doubles the run's cost (bench/endpointing.py --cost).
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._features = LogMel()

    def probability(self, pcm: bytes, rate: int) -> float:
        """How likely the turn in ``pcm`` (16-bit mono at ``rate``) is finished, 0 to 1."""
        import numpy as np

        # Only the window's worth is resampled (a turn can last 30 s); a little more, so the
        # resampler's filter has settled where the window begins.
        keep = int((WINDOW_SECONDS + 0.05) * rate) * 2
        audio = np.frombuffer(resample_pcm(pcm[-keep:], rate, MODEL_RATE), dtype="<i2")
        window = MODEL_RATE * WINDOW_SECONDS
        samples = audio[-window:].astype(np.float32) / 32768.0
        batch: Any = self._features(samples)[np.newaxis]
        (scores,) = self._session.run(None, {"input_features": batch})
        return float(np.asarray(scores).reshape(-1)[0])

    def is_complete(self, pcm: bytes, rate: int) -> bool:
        return self.probability(pcm, rate) >= COMPLETE


class LogMel:
    """The model's input: Whisper's 80-band log-mel spectrogram (faster-whisper's
    ``FeatureExtractor``, numbers for numbers) of the audio zero-padded in front to 8 s and
    normalised over those 8 s, without computing the padding's frames one by one.

    Normalised, the padding is one constant value, so every STFT frame that lies wholly in it has
    the mel energies of a constant frame: those of a frame of ones (computed once), times the
    constant squared. A 2 s turn leaves three quarters of the window to padding: its FFTs are
    skipped."""

    N_FFT = 400
    HOP = 160
    FRAMES = WINDOW_SECONDS * MODEL_RATE // 160

    def __init__(self) -> None:
        import numpy as np
        from faster_whisper.feature_extractor import FeatureExtractor

        self._window = np.hanning(self.N_FFT + 1)[:-1].astype(np.float32)
        self._filters = FeatureExtractor.get_mel_filters(MODEL_RATE, self.N_FFT, 80).astype(
            np.float32
        )
        self._ones = self._filters @ (np.abs(np.fft.rfft(self._window)) ** 2).astype(np.float32)

    def __call__(self, audio: Any) -> Any:
        """``audio``: float samples at 16 kHz, at most 8 s; (80, 800) float32 features."""
        import numpy as np

        size = MODEL_RATE * WINDOW_SECONDS
        pad = size - audio.size
        # Zero mean and unit variance over the padded window, from the audio's own sums.
        mean = float(audio.sum(dtype=np.float64)) / size
        variance = float(np.square(audio, dtype=np.float64).sum()) / size - mean * mean
        scale = 1.0 / np.sqrt(max(variance, 0.0) + 1e-7)
        constant = -mean * scale
        # Frames centred on t * HOP reach N_FFT / 2 either side (reflected at the edges): those
        # ending before the audio begins see only the constant.
        half = self.N_FFT // 2
        flat = 0 if pad < half else min(self.FRAMES, (pad - half) // self.HOP + 1)
        first = flat * self.HOP - half  # where the first computed frame begins
        signal = np.empty(size + 2 * half, dtype=np.float32)
        signal[half : half + pad] = constant
        signal[half + pad : half + size] = (audio - mean) * scale
        signal[:half] = signal[2 * half : half : -1]  # numpy's "reflect" padding
        signal[half + size :] = signal[half + size - 2 : size - 2 : -1]
        start = first + half
        count = self.FRAMES - flat
        frames = np.lib.stride_tricks.as_strided(
            signal[start:],
            (count, self.N_FFT),
            (self.HOP * signal.strides[0], signal.strides[0]),
            writeable=False,
        )
        power = np.abs(np.fft.rfft(frames * self._window, axis=-1)) ** 2
        mel = np.empty((80, self.FRAMES), dtype=np.float32)
        mel[:, :flat] = (self._ones * (constant * constant))[:, np.newaxis]
        mel[:, flat:] = self._filters @ power.T.astype(np.float32)
        log = np.log10(np.maximum(mel, 1e-10))
        log = np.maximum(log, log.max() - 8.0)
        return ((log + 4.0) / 4.0).astype(np.float32)


@lru_cache(maxsize=1)
def shared_model() -> TurnModel:
    """The process's model, loaded on first use (``TurnModelMissing`` when it cannot be)."""
    return TurnModel(installed_model_path())
