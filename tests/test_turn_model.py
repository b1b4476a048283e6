"""The end-of-turn model: the pinned file `make install` takes out of its wheel, run on real
speech."""

from __future__ import annotations

import shutil
from array import array
from pathlib import Path

import pytest

from callplane.speech import turn_model
from callplane.speech.synthesis import EspeakSynthesizer
from callplane.speech.turn_model import TurnModel, TurnModelMissing, installed_model_path


def _speech(text: str, rate: int = 8000) -> bytes:
    return EspeakSynthesizer(words_per_minute=150).synthesize(text, rate)


def test_the_installed_model_is_the_pinned_file() -> None:
    path = installed_model_path()
    assert path.name == "smart-turn-v3.2-cpu.onnx"
    TurnModel(path)  # checks the SHA-256 as it loads


def test_a_model_file_that_is_not_the_pinned_one_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "smart-turn.onnx"
    shutil.copyfile(installed_model_path(), other)
    with other.open("ab") as file:
        file.write(b"\0")
    with pytest.raises(TurnModelMissing, match="not the pinned"):
        TurnModel(other)


def test_without_the_file_the_model_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(turn_model, "MODEL_PATH", tmp_path / "smart-turn-v3.2-cpu.onnx")
    with pytest.raises(TurnModelMissing, match="not installed"):
        installed_model_path()


@pytest.mark.parametrize("rate", [8000, 16000, 48000])
def test_a_probability_for_speech_at_any_rate(rate: int) -> None:
    model = turn_model.shared_model()
    probability = model.probability(_speech("Can you tell me my balance?", rate), rate)
    assert 0.0 <= probability <= 1.0


@pytest.mark.parametrize(
    "pcm",
    [b"", bytes(160), array("h", [32767, -32768] * 8000).tobytes(), bytes(16000 * 2 * 20)],
    ids=["nothing", "one frame of silence", "full-scale square wave", "20 s of silence"],
)
def test_odd_audio_gets_a_probability_not_an_error(pcm: bytes) -> None:
    probability = turn_model.shared_model().probability(pcm, 16000)
    assert 0.0 <= probability <= 1.0
