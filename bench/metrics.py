"""Benchmark: what Prometheus metrics cost the API (issue 29; goal: at most 3 % of throughput).

    .venv/bin/python bench/metrics.py [--rounds 3] [--duration 5] [--workers 1]

Two servers over one SQLite database, both with ``PROMETHEUS_MULTIPROC_DIR`` set (the costlier
mode: every observation is written to a memory-mapped file): callplane as served ("on") and the
same app without its HTTP metrics middleware ("off", ``bench/metrics_app.py``). wrk drives one
server at a time, alternating on/off (the order flipped every round) so that the machine's
other load falls on both alike; the result per route is the median over the rounds.

Routes: ``GET /v1/voices/{uuid}`` (authenticated, one indexed read: a typical API request) and
``GET /healthz`` (almost no work: the worst case for a fixed per-request cost).

On a shared, loaded machine wrk's numbers swing by more than the cost measured, so a second
measurement runs in this process: both apps driven straight through ASGI (no sockets), in
blocks of requests alternating on/off, each block timed in CPU time of this process
(``time.process_time``: other processes' load does not count); the result is the median
CPU microseconds per request of each. Last, the middleware's own fixed cost: it wraps a
no-op ASGI app, timed against that app alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from servers import BIN, ROOT, load_parser, require_wrk, run, run_wrk, serve, stop, wait_ready

BLOCKS = 15
PER_BLOCK = 300
VOICE = "6f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"


def main() -> None:
    parser = load_parser(__doc__, port=8191)
    parser.add_argument("--rounds", type=int, default=3)
    parser.set_defaults(workers=1, duration=5)
    args = parser.parse_args()
    require_wrk()
    work = Path(tempfile.mkdtemp(prefix="callplane-bench-metrics-"))
    multiproc = work / "prometheus"
    multiproc.mkdir()
    env = {
        **os.environ,
        "CALLPLANE_DATABASE_URL": f"sqlite:///{work / 'bench.db'}",
        "CALLPLANE_RATE_LIMIT": "100000000/minute",
        "CALLPLANE_LOG_LEVEL": "warning",
        "CALLPLANE_WORKER": "off",
        "PROMETHEUS_MULTIPROC_DIR": str(multiproc),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "bench")]),
    }
    callplane = str(BIN / "callplane")
    org = json.loads(run([callplane, "orgs", "create", "Bench", "--json"], env))
    doc = work / "voices.json"
    doc.write_text(json.dumps({"voices": [{"id": VOICE, "name": "Aria", "languages": ["en"]}]}))
    run([callplane, "load", "--org", str(org["id"]), str(doc)], env)
    auth = {"Authorization": f"Bearer {org['api_key']}"}
    ports = {"on": args.port, "off": args.port + 1}
    servers = {
        mode: serve(f"metrics_app:metrics_{mode}", port, args.workers, env)
        for mode, port in ports.items()
    }
    routes = {
        "GET /v1/voices/{uuid}": (f"/v1/voices/{VOICE}", auth),
        "GET /healthz": ("/healthz", {}),
    }
    rps: dict[tuple[str, str], list[float]] = {}
    try:
        for port in ports.values():
            wait_ready(f"http://127.0.0.1:{port}/healthz")
        warm = argparse.Namespace(**{**vars(args), "duration": 2})
        for label, (path, headers) in routes.items():
            for port in ports.values():
                _wrk(f"http://127.0.0.1:{port}{path}", warm, headers)
            for round_ in range(args.rounds):
                order = ("on", "off") if round_ % 2 == 0 else ("off", "on")
                for mode in order:
                    url = f"http://127.0.0.1:{ports[mode]}{path}"
                    rps.setdefault((label, mode), []).append(_wrk(url, args, headers)["rps"])
    finally:
        for server in servers.values():
            stop(server)
    in_process = asyncio.run(_in_process(work, routes, env))
    shutil.rmtree(work, ignore_errors=True)

    print(
        f"\nworkers={args.workers} connections={args.connections} duration={args.duration}s "
        f"rounds={args.rounds} (median req/s)"
    )
    print(f"{'route':<26} {'metrics on':>11} {'metrics off':>12} {'cost':>7}")
    for label in routes:
        on = statistics.median(rps[(label, "on")])
        off = statistics.median(rps[(label, "off")])
        print(f"{label:<26} {on:>11.0f} {off:>12.0f} {(1 - on / off) * 100:>6.1f}%")
    print("\nin process, CPU time per request (median of blocks, microseconds)")
    print(f"{'route':<26} {'metrics on':>11} {'metrics off':>12} {'cost':>7}")
    for label in routes:
        on, off = in_process[(label, "on")], in_process[(label, "off")]
        print(f"{label:<26} {on:>11.1f} {off:>12.1f} {(on / off - 1) * 100:>6.1f}%")
    fixed = asyncio.run(_fixed_cost())
    print(f"\nthe HTTP metrics middleware alone: {fixed:.1f} us of CPU per request")


async def _fixed_cost() -> float:
    from callplane.app import create_app_from_env
    from callplane.observability.middleware import HttpMetrics

    routes = create_app_from_env().routes
    from fastapi.routing import iter_route_contexts

    voices = next(
        c.original_route for c in iter_route_contexts(routes) if c.path == "/v1/voices/{uuid}"
    )

    async def inner(scope: dict[str, Any], receive: Any, send: Any) -> None:
        scope["route"] = voices
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    wrapped = HttpMetrics(inner, routes)  # type: ignore[arg-type]
    scope = {
        "type": "http",
        "method": "GET",
        "path": f"/v1/voices/{VOICE}",
        "state": {"request_id": "r"},
    }

    async def nothing(*_args: Any) -> Any:
        return {}

    costs: dict[str, list[float]] = {"with": [], "without": []}
    for _ in range(BLOCKS):
        for name, app in (("with", wrapped), ("without", inner)):
            started = time.process_time()
            for _ in range(5000):
                await app(dict(scope), nothing, nothing)
            costs[name].append((time.process_time() - started) / 5000 * 1e6)
    return statistics.median(costs["with"]) - statistics.median(costs["without"])


async def _in_process(
    work: Path, routes: dict[str, tuple[str, dict[str, str]]], env: dict[str, str]
) -> dict[tuple[str, str], float]:
    for name in ("CALLPLANE_DATABASE_URL", "CALLPLANE_RATE_LIMIT", "CALLPLANE_WORKER"):
        os.environ[name] = env[name]
    # Before prometheus_client is imported: its values are then memory-mapped files, as served.
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(work / "prometheus")
    sys.path[:0] = [str(ROOT / "src"), str(ROOT / "bench")]
    import metrics_app

    apps = {"on": metrics_app.metrics_on(), "off": metrics_app.metrics_off()}
    result: dict[tuple[str, str], float] = {}
    async with AsyncExitStack() as stack:
        for app in apps.values():
            await stack.enter_async_context(app.router.lifespan_context(app))
        for label, (path, headers) in routes.items():
            times: dict[str, list[float]] = {"on": [], "off": []}
            for block in range(BLOCKS * 2 + 2):
                mode = ("on", "off")[block % 2]
                started = time.process_time()
                await _drive(apps[mode], path, headers, PER_BLOCK)
                if block >= 2:  # the first pair warms up
                    times[mode].append((time.process_time() - started) / PER_BLOCK * 1e6)
            for mode, values in times.items():
                result[(label, mode)] = statistics.median(values)
    return result


async def _drive(app: Any, path: str, headers: dict[str, str], count: int) -> None:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"bench")]
        + [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 80),
    }
    status: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    for _ in range(count):
        await app(dict(scope), receive, send)
    if any(code != 200 for code in status):
        raise RuntimeError(f"{path}: answered {sorted(set(status))}")


def _wrk(url: str, args: argparse.Namespace, headers: dict[str, str]) -> dict[str, float]:
    return run_wrk(
        url,
        threads=args.threads,
        connections=args.connections,
        duration=args.duration,
        headers=headers,
    )


if __name__ == "__main__":
    main()
