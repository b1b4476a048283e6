"""What every bench script needs: the CLI, servers started and stopped, and wrk runs measured.

Servers are uvicorn (uvloop, httptools, no access log) started in their own process group on
127.0.0.1 and stopped by it; wrk runs on the same machine and its report is parsed into req/s and
p50/p99 in milliseconds. A run with any non-2xx response raises: a number over errors is no
measurement.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def load_parser(doc: str | None, port: int) -> argparse.ArgumentParser:
    """The options every load benchmark takes; scripts add their own before parsing."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--duration", type=int, default=8, help="seconds per measurement")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument("--port", type=int, default=port)
    return parser


def require_wrk() -> None:
    if shutil.which("wrk") is None:
        sys.exit("wrk is required: apt-get install -y wrk")


def run(cmd: list[str], env: dict[str, str]) -> str:
    return subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout


def serve(app: str, port: int, workers: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    cmd = [str(BIN / "uvicorn"), app, "--factory", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--workers", str(workers), "--loop", "uvloop", "--http", "httptools"]
    cmd += ["--no-access-log", "--log-level", "warning"]
    return subprocess.Popen(cmd, env=env, cwd=ROOT / "bench", start_new_session=True)


def wait_ready(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except Exception:
            time.sleep(0.2)
    raise RuntimeError(f"server at {url} did not become ready")


def stop(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=20)


def run_wrk(
    url: str,
    *,
    threads: int,
    connections: int,
    duration: int,
    headers: dict[str, str],
    script: Path | None = None,
) -> dict[str, float]:
    """One wrk run against ``url``: {"rps", "p50", "p99"} (milliseconds)."""
    cmd = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--latency"]
    if script is not None:
        cmd += ["-s", str(script)]
    for name, value in headers.items():
        cmd += ["-H", f"{name}: {value}"]
    out = subprocess.run([*cmd, url], check=True, capture_output=True, text=True).stdout
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non_2xx:
        raise RuntimeError(f"{url}: {non_2xx.group(1)} non-2xx responses\n{out}")

    def ms(label: str) -> float:
        m = re.search(rf"{label}%\s+([\d.]+)(us|ms|s)", out)
        assert m, out
        return float(m.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)]

    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    assert rps, out
    return {"rps": float(rps.group(1)), "p50": ms("50"), "p99": ms("99")}
