"""Benchmark: external call reads and signed audio against the floor, on the same server.

    .venv/bin/python bench/external_calls.py [--workers 2] [--duration 8] [--connections 32]

Targets: GET /v1/external_calls/{uuid} (three legs, three signed URLs), GET /v1/external_calls
(a page of 20 calls, 60 legs: one query for the page's legs, signing in a loop) and the signed
audio URL (no API key; one lookup by recording id, HMAC check, file streamed from local storage).
Same harness as bench/voices.py (uvicorn, wrk, the floor app); prints req/s, latency and ratios.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import socket
import struct
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servers import BIN, load_parser, require_wrk, run, serve, stop, wait_ready  # noqa: E402
from voices import VOICE, wrk  # noqa: E402

CALL = "7a1e0c55-3b2d-4e8f-9c10-000000000000"


def wav(frames: int = 4000) -> str:
    data = bytes([128]) * frames
    header = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE"
    fmt = b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, 8000, 8000, 1, 8)
    return base64.b64encode(header + fmt + b"data" + struct.pack("<I", len(data)) + data).decode()


def document(calls: int) -> dict[str, object]:
    audio = wav()
    items = []
    for n in range(calls):
        call_id = CALL[:-6] + f"{n:06d}"
        legs = [
            {
                "file_name": f"leg-{leg}.wav",
                "started_at": f"2025-05-01T10:0{leg}:00Z",
                "status": "transcribed",
                "transcript": [{"speaker": "agent", "text": "Hello", "start": 0, "end": 1}],
                "summary": "Greeting",
                "audio_base64": audio,
            }
            for leg in range(3)
        ]
        items.append(
            {"id": call_id, "title": f"Call {n}", "status": "transcribed", "recordings": legs}
        )
    # One voice for the floor's one-query route.
    return {"voices": [{"id": VOICE, "name": "Aria"}], "external_calls": items}


def main() -> None:
    parser = load_parser(__doc__, port=0)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    if args.port == 0:  # a free port, so runs beside other helpers' servers never collide
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            args.port = probe.getsockname()[1]
    require_wrk()

    work = Path(tempfile.mkdtemp(prefix="callplane-bench-ext-"))
    base = f"http://127.0.0.1:{args.port}"
    env = {
        **os.environ,
        "CALLPLANE_DATABASE_URL": f"sqlite:///{work / 'bench.db'}",
        "CALLPLANE_STORAGE_URL": f"file://{work / 'recordings'}",
        "CALLPLANE_PUBLIC_URL": base,
        "CALLPLANE_RATE_LIMIT": "100000000/minute",
        "CALLPLANE_LOG_LEVEL": "warning",
        # The bench directory (the floor app) after any tree the caller puts first, so a
        # worktree or an older checkout is what is measured (PYTHONPATH=<tree>/src).
        "PYTHONPATH": os.pathsep.join(
            p for p in (os.environ.get("PYTHONPATH"), str(Path(__file__).resolve().parent)) if p
        ),
    }
    callplane = str(BIN / "callplane")
    org = json.loads(run([callplane, "orgs", "create", "Bench", "--json"], env))
    doc = work / "external_calls.json"
    doc.write_text(json.dumps(document(args.calls)))
    run([callplane, "load", "--org", str(org["id"]), str(doc)], env)
    auth = {"Authorization": f"Bearer {org['api_key']}"}

    results: dict[str, dict[str, float]] = {}
    floor = [("floor: one query", "floor_app:create_app", "/floor/voices/" + VOICE, {})]
    for label, app, path, headers in floor:
        server = serve(app, args.port, args.workers, env)
        try:
            wait_ready(f"{base}/static")
            wrk(f"{base}{path}", argparse.Namespace(**{**vars(args), "duration": 2}), headers)
            results[label] = wrk(f"{base}{path}", args, headers)
        finally:
            stop(server)

    server = serve("callplane.app:create_app_from_env", args.port, args.workers, env)
    try:
        wait_ready(f"{base}/healthz")
        request = urllib.request.Request(f"{base}/v1/external_calls/{CALL}", headers=auth)
        with urllib.request.urlopen(request) as response:
            audio_url = json.load(response)["recording_presigned_urls"][0]
        targets = [
            ("GET /v1/external_calls/{uuid}", f"{base}/v1/external_calls/{CALL}", auth),
            ("GET /v1/external_calls", f"{base}/v1/external_calls?page_size=20", auth),
            ("GET signed audio URL", audio_url, {}),
        ]
        for label, url, headers in targets:
            wrk(url, argparse.Namespace(**{**vars(args), "duration": 2}), headers)
            results[label] = wrk(url, args, headers)
    finally:
        stop(server)

    print(f"\nworkers={args.workers} connections={args.connections} duration={args.duration}s")
    print(f"{'target':<36} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'/ floor':>8}")
    floor_rps = results["floor: one query"]["rps"]
    for label, r in results.items():
        ratio = r["rps"] / floor_rps
        print(f"{label:<36} {r['rps']:>9.0f} {r['p50']:>8.2f} {r['p99']:>8.2f} {ratio:>8.2f}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
