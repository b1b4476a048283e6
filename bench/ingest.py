"""Ingest: speech recognition speed against real time, and recording upload throughput.

1. Transcription: about a minute of espeak-ng speech at 8 kHz mono (telephone audio) through
   the recogniser the worker uses (faster-whisper, Whisper tiny.en, int8), with all cores and
   with one thread (one worker's share when several run on two cores). Reported as the real-time
   factor: seconds of audio per second of work.
2. Upload: POST /v1/external_calls/{uuid}/recordings of a large body streamed by httpx to
   `callplane serve` (one process) storing on local disk, in MB/s, beside the raw speed of
   writing the same bytes to the same disk (the floor).

    .venv/bin/python bench/ingest.py [--seconds 60] [--upload-mb 200]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
import wave
from pathlib import Path

import httpx
import numpy as np
from servers import BIN, run, serve, stop, wait_ready

from callplane.speech.transcriber import WhisperTranscriber, resample

SENTENCES = [
    "Hello, thank you for calling the pharmacy, how can I help you today?",
    "I would like to refill my prescription for blood pressure tablets.",
    "Can I have your date of birth and the name on the account please?",
    "Sure, it is the fourth of March, and the name is Daniel Harper.",
    "Thank you, your refill will be ready for pickup tomorrow afternoon.",
    "Great, and could you also check whether my insurance covers it?",
]


def telephone_speech(seconds: float, work: Path) -> bytes:
    """espeak-ng sentences with short pauses, repeated to ``seconds``, as 8 kHz int16 PCM."""
    clips = []
    for index, sentence in enumerate(SENTENCES):
        path = work / f"s{index}.wav"
        subprocess.run(["espeak-ng", "-w", str(path), sentence], check=True)
        with wave.open(str(path)) as w:
            samples = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
            rate = w.getframerate()
        narrow = resample(samples.astype(np.float32) / 32768, rate, 8000)
        clips += [narrow, np.zeros(4000, np.float32)]
    audio = np.concatenate(clips)
    audio = np.tile(audio, int(np.ceil(seconds * 8000 / len(audio))))[: int(seconds * 8000)]
    return (np.clip(audio, -1, 1) * 32767).astype("<i2").tobytes()


def transcription(seconds: float, work: Path) -> list[tuple[str, float, float]]:
    pcm = telephone_speech(seconds, work)
    results = []
    for label, threads in (("all cores", 0), ("1 thread", 1)):
        started = time.perf_counter()
        transcriber = WhisperTranscriber(cpu_threads=threads)
        load = time.perf_counter() - started
        started = time.perf_counter()
        segments = transcriber.transcribe(pcm, 8000)
        took = time.perf_counter() - started
        assert segments, "nothing recognised"
        results.append((label, load, seconds / took))
    return results


def upload(megabytes: int, work: Path, port: int) -> tuple[float, float]:
    chunk = os.urandom(1024 * 1024)
    # The floor: the same bytes written straight to the same disk.
    started = time.perf_counter()
    with (work / "floor.bin").open("wb") as out:
        for _ in range(megabytes):
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    floor = megabytes / (time.perf_counter() - started)
    (work / "floor.bin").unlink()

    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "CALLPLANE_DATABASE_URL": f"sqlite:///{work / 'bench.db'}",
        "CALLPLANE_STORAGE_URL": f"file://{work / 'recordings'}",
        "CALLPLANE_RATE_LIMIT": "off",
        "CALLPLANE_LOG_LEVEL": "warning",
        # Only the upload is measured: no worker decodes what arrives.
        "CALLPLANE_WORKER": "off",
        "CALLPLANE_MAX_RECORDING_BYTES": str((megabytes + 1) * 1024 * 1024),
    }
    org = json.loads(run([str(BIN / "callplane"), "orgs", "create", "Bench", "--json"], env))
    headers = {"Authorization": f"Bearer {org['api_key']}"}
    server = serve("callplane.app:create_app_from_env", port, 1, env)
    try:
        wait_ready(f"{base}/healthz")
        with httpx.Client(base_url=base, headers=headers, timeout=120) as client:
            call = client.post("/v1/external_calls", json={"title": "bench"}).json()["id"]

            def body() -> object:
                for _ in range(megabytes):
                    yield chunk

            rates = []
            for _ in range(3):
                started = time.perf_counter()
                response = client.post(
                    f"/v1/external_calls/{call}/recordings",
                    content=body(),  # type: ignore[arg-type]
                    headers={"Content-Type": "audio/wav"},
                )
                took = time.perf_counter() - started
                assert response.status_code == 201, response.text
                rates.append(megabytes / took)
    finally:
        stop(server)
    return max(rates), floor


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="audio to transcribe")
    parser.add_argument("--upload-mb", type=int, default=200)
    parser.add_argument("--port", type=int, default=8191)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="callplane-bench-ingest-"))
    try:
        print(f"transcription of {args.seconds:g} s of 8 kHz mono speech (tiny.en, int8)")
        for label, load, factor in transcription(args.seconds, work):
            print(f"  {label:<10} model load {load:5.2f} s   {factor:6.1f}x real time")
        best, floor = upload(args.upload_mb, work, args.port)
        print(f"upload of {args.upload_mb} MB to local storage (best of 3)")
        print(f"  callplane  {best:7.0f} MB/s   disk floor {floor:7.0f} MB/s   {best / floor:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
