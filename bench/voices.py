"""Benchmark: GET /v1/voices/{uuid} against the floor (bench/floor_app.py) on the same server.

    .venv/bin/python bench/voices.py [--workers 2] [--duration 8] [--connections 32]

Both apps run under uvicorn (uvloop, httptools, no access log) with the same worker count over
the same SQLite file; wrk (Debian package `wrk`) drives each in turn from 127.0.0.1. callplane runs
with authentication and rate limiting on (a limit high enough never to reject, so its cost is
counted but no request is refused). Prints req/s, latency and the ratio callplane / floor.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servers import BIN, ROOT, load_parser, require_wrk, run, run_wrk, serve, stop, wait_ready  # noqa: E402

VOICE = "0b7d6f3a-2c1e-4f5a-9b8c-7d6e5f4a3b01"


def wrk(url: str, args: argparse.Namespace, headers: dict[str, str]) -> dict[str, float]:
    return run_wrk(
        url,
        threads=args.threads,
        connections=args.connections,
        duration=args.duration,
        headers=headers,
    )


def main() -> None:
    args = load_parser(__doc__, port=8181).parse_args()
    require_wrk()

    work = Path(tempfile.mkdtemp(prefix="callplane-bench-"))
    env = {
        **os.environ,
        "CALLPLANE_DATABASE_URL": f"sqlite:///{work / 'bench.db'}",
        "CALLPLANE_RATE_LIMIT": "100000000/minute",
        "CALLPLANE_LOG_LEVEL": "warning",
        "PYTHONPATH": str(ROOT / "bench"),
    }
    callplane = str(BIN / "callplane")
    org = json.loads(run([callplane, "orgs", "create", "Bench", "--json"], env))
    voices = [{"id": VOICE, "name": "Aria", "languages": ["en-US"], "tags": ["warm"]}]
    voices += [{"name": f"voice-{i}", "languages": ["en-US"]} for i in range(200)]
    doc = work / "voices.json"
    doc.write_text(json.dumps({"voices": voices}))
    run([callplane, "load", "--org", str(org["id"]), str(doc)], env)
    auth = {"Authorization": f"Bearer {org['api_key']}"}

    results = {}
    targets = [
        ("floor: static body", "floor_app:create_app", "/static", {}),
        ("floor: one query", "floor_app:create_app", f"/floor/voices/{VOICE}", {}),
        (
            "callplane GET /v1/voices/{uuid}",
            "callplane.app:create_app_from_env",
            f"/v1/voices/{VOICE}",
            auth,
        ),
    ]
    for label, app, path, headers in targets:
        server = serve(app, args.port, args.workers, env)
        try:
            wait_ready(
                f"http://127.0.0.1:{args.port}/static"
                if "floor" in app
                else f"http://127.0.0.1:{args.port}/healthz"
            )
            url = f"http://127.0.0.1:{args.port}{path}"
            wrk(url, argparse.Namespace(**{**vars(args), "duration": 2}), headers)  # warm-up
            results[label] = wrk(url, args, headers)
        finally:
            stop(server)

    print(f"\nworkers={args.workers} connections={args.connections} duration={args.duration}s")
    print(f"{'target':<36} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8}")
    for label, r in results.items():
        print(f"{label:<36} {r['rps']:>9.0f} {r['p50']:>8.2f} {r['p99']:>8.2f}")
    ours = results["callplane GET /v1/voices/{uuid}"]["rps"]
    floor = results["floor: one query"]["rps"]
    print(f"\nratio callplane / floor (one query): {ours / floor:.2f}  (target >= 0.60)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
