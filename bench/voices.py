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
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
VOICE = "0b7d6f3a-2c1e-4f5a-9b8c-7d6e5f4a3b01"


def run(cmd: list[str], env: dict[str, str]) -> str:
    return subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout


def wait_ready(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except Exception:
            time.sleep(0.2)
    raise RuntimeError(f"server at {url} did not become ready")


def serve(app: str, port: int, workers: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    cmd = [
        str(BIN / "uvicorn"),
        app,
        "--factory",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--loop",
        "uvloop",
        "--http",
        "httptools",
        "--no-access-log",
        "--log-level",
        "warning",
    ]
    return subprocess.Popen(cmd, env=env, cwd=ROOT / "bench", start_new_session=True)


def stop(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=20)


def wrk(url: str, args: argparse.Namespace, headers: dict[str, str]) -> dict[str, float]:
    cmd = ["wrk", f"-t{args.threads}", f"-c{args.connections}", f"-d{args.duration}s", "--latency"]
    for name, value in headers.items():
        cmd += ["-H", f"{name}: {value}"]
    out = subprocess.run([*cmd, url], check=True, capture_output=True, text=True).stdout
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non_2xx:
        raise RuntimeError(f"{url}: {non_2xx.group(1)} non-2xx responses\n{out}")

    def ms(label: str) -> float:
        m = re.search(rf"{label}%\s+([\d.]+)(us|ms|s)", out)
        assert m, out
        scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)]
        return float(m.group(1)) * scale

    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    return {"rps": rps, "p50": ms("50"), "p99": ms("99")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--duration", type=int, default=8)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--port", type=int, default=8181)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is required: apt-get install -y wrk")

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
