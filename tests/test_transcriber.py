"""The offline recogniser on espeak-ng speech: known words, times, confidence, hints, no network."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.audio import ESPEAK_RATE, speech, transcriber, words_of

SENTENCE = "Please call me back tomorrow morning about the invoice."


def _pcm(samples: object) -> bytes:
    return bytes(memoryview(samples))  # type: ignore[arg-type]


def test_known_words_with_times_and_confidence() -> None:
    samples = speech(SENTENCE)
    length = len(samples) / ESPEAK_RATE
    segments = transcriber().transcribe(_pcm(samples), ESPEAK_RATE)

    assert segments
    heard = words_of(" ".join(s.text for s in segments))
    assert {"call", "back", "tomorrow", "morning", "invoice"} <= heard
    for segment in segments:
        assert 0 <= segment.start < segment.end <= length + 0.5
        assert 0 < segment.confidence <= 1
        assert segment.words and all(w.start <= w.end for w in segment.words)


def test_telephone_rate_audio_is_resampled() -> None:
    import numpy as np

    from callplane.speech.transcriber import resample

    sentence = "Please call me back tomorrow morning about the payment."
    narrow = resample(speech(sentence).astype(np.float32) / 32768, ESPEAK_RATE, 8000)
    pcm = (np.clip(narrow, -1, 1) * 32767).astype("<i2").tobytes()
    heard = words_of(" ".join(s.text for s in transcriber().transcribe(pcm, 8000)))
    assert {"tomorrow", "payment"} <= heard


def test_hints_steer_recognition_of_an_unusual_name() -> None:
    samples = speech("Hello, this is a test of the callplane transcription service.")
    plain = " ".join(s.text for s in transcriber().transcribe(_pcm(samples), ESPEAK_RATE))
    hinted = transcriber().transcribe(_pcm(samples), ESPEAK_RATE, hints=["callplane"])
    assert "callplane" not in plain.lower()
    assert "callplane" in " ".join(s.text for s in hinted).lower()


def test_silence_gives_no_segments() -> None:
    import numpy as np

    pcm = np.zeros(3 * ESPEAK_RATE, dtype="<i2").tobytes()
    assert transcriber().transcribe(pcm, ESPEAK_RATE) == []


def test_model_loads_and_runs_with_the_network_cut_off(tmp_path: Path) -> None:
    """The model comes from the installed wheel: with every socket refused and an empty hub
    cache, building a transcriber and recognising speech still work, and nothing is cached."""
    clip = tmp_path / "clip.pcm"
    clip.write_bytes(_pcm(speech(SENTENCE)))
    script = f"""
import socket
def refuse(*args, **kwargs):
    raise OSError("network access attempted")
socket.socket.connect = refuse
socket.create_connection = refuse
from callplane.speech.transcriber import WhisperTranscriber
pcm = open({str(clip)!r}, "rb").read()
segments = WhisperTranscriber(cpu_threads=1).transcribe(pcm, {ESPEAK_RATE})
print(" ".join(s.text for s in segments))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env["HF_HOME"] = str(tmp_path / "hf")
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "invoice" in result.stdout.lower()
    assert not (tmp_path / "hf").exists()


def test_one_model_per_process_whatever_asks() -> None:
    from callplane.settings import Settings
    from callplane.speech.transcriber import WhisperTranscriber, shared_transcriber

    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    live, batch = shared_transcriber(settings, "live"), shared_transcriber(settings, "batch")
    assert live is not batch  # they ask different things (word times, the window)...
    assert live.word_timestamps is False and batch.word_timestamps is True
    # ...of the one model, as does any other transcriber built in the process.
    assert live._model is batch._model is WhisperTranscriber(word_timestamps=False)._model


def test_live_turns_are_recognised_in_the_short_window_with_hints() -> None:
    import numpy as np

    from callplane.settings import Settings
    from callplane.speech.transcriber import LIVE_WINDOW_SECONDS, shared_transcriber

    live = shared_transcriber(Settings(_env_file=None), "live")  # type: ignore[call-arg]
    assert live.window_seconds == LIVE_WINDOW_SECONDS < 30
    samples = speech(SENTENCE)
    segments = live.transcribe(_pcm(samples), ESPEAK_RATE)
    assert len(segments) == 1 and 0 < segments[0].confidence <= 1
    assert 0 == segments[0].start < segments[0].end <= len(samples) / ESPEAK_RATE + 0.01
    assert {"call", "back", "tomorrow", "morning", "invoice"} <= words_of(segments[0].text)

    named = speech("Hello, this is a test of the callplane transcription service.")
    hinted = live.transcribe(_pcm(named), ESPEAK_RATE, hints=["callplane"])
    assert "callplane" in " ".join(s.text for s in hinted).lower()

    assert live.transcribe(np.zeros(3 * ESPEAK_RATE, dtype="<i2").tobytes(), ESPEAK_RATE) == []
    hiss = np.random.default_rng(7).integers(-16, 17, 3 * ESPEAK_RATE).astype("<i2")  # -66 dBFS
    assert live.transcribe(hiss.tobytes(), ESPEAK_RATE) == []


def test_a_turn_longer_than_the_window_is_recognised_whole() -> None:
    from callplane.settings import Settings
    from callplane.speech.transcriber import shared_transcriber

    live = shared_transcriber(Settings(_env_file=None), "live")  # type: ignore[call-arg]
    first = speech("Please call me back tomorrow morning about the invoice.")
    last = speech("The package never arrived and I have been waiting for two weeks.")
    gap = bytes(2 * ESPEAK_RATE * 2)  # silences to push the last words past the window
    pcm = _pcm(first) + gap * 7 + _pcm(last)
    assert len(pcm) / 2 / ESPEAK_RATE > live.window_seconds
    heard = words_of(" ".join(s.text for s in live.transcribe(pcm, ESPEAK_RATE)))
    assert {"invoice", "package", "weeks"} <= heard


def test_a_guess_abandoned_before_its_decoding_is_not_decoded() -> None:
    import threading

    from callplane.settings import Settings
    from callplane.speech.transcriber import shared_transcriber

    live = shared_transcriber(Settings(_env_file=None), "live")  # type: ignore[call-arg]
    pcm = _pcm(speech(SENTENCE))
    abandoned = threading.Event()
    assert words_of(live.transcribe(pcm, ESPEAK_RATE, abandoned=abandoned)[0].text) >= {"invoice"}
    abandoned.set()
    assert live.transcribe(pcm, ESPEAK_RATE, abandoned=abandoned) == []


def test_turns_of_either_window_are_heard_whole() -> None:
    # 10 s for a turn that fits (most do), 20 s for a longer one: the same words either way.
    from callplane.settings import Settings
    from callplane.speech.transcriber import SHORT_WINDOW_SECONDS, shared_transcriber

    live = shared_transcriber(Settings(_env_file=None), "live")  # type: ignore[call-arg]
    short = speech("Please call me back tomorrow morning about the invoice.")
    long_turn = _pcm(short) + bytes(ESPEAK_RATE * 2 * 8) + _pcm(short)
    assert len(long_turn) / 2 / ESPEAK_RATE > SHORT_WINDOW_SECONDS
    for pcm in (_pcm(short), long_turn):
        heard = words_of(" ".join(s.text for s in live.transcribe(pcm, ESPEAK_RATE)))
        assert {"call", "back", "tomorrow", "morning", "invoice"} <= heard
