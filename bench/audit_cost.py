"""Benchmark: what the audit log costs a write, the custom-data PATCH with the log and without.

    .venv/bin/python bench/audit_cost.py                        # SQLite, 6 rounds of 8 s each way
    .venv/bin/python bench/audit_cost.py --database postgresql
    .venv/bin/python bench/audit_cost.py --cpu                  # CPU per PATCH, in process

Two servers run side by side, the same code and the same data (the custom-data bench's 100,000
customers, ``bench/custom_data.py``), each on a database of its own: one as served, one whose
requests never open an audit event (``without_audit``: the pipeline's ``open_event`` does
nothing, so nothing is appended). Beside the server with the log runs what a worker's
AUDIT_SEAL task does (``--seal-loop``: seal what was written, every second), on the same
machine, so the cost of sealing is in the ratio. wrk (the shared harness' script,
``-t2 -c32``) PATCHes ``{"score": N}`` on random ids of one server, then of the other,
alternating which goes first each round, so a machine whose load moves (a shared VM) moves both
alike; each round's ratio (req/s with the log / without) is printed beside the 1-minute load
average, then the median and
the pooled ratio. Results are appended to ``bench/results/audit_cost.jsonl`` (git-ignored).

``--cpu``: no server and no wrk: the whole ASGI app called in process, PATCH after PATCH on a
table of 1,000 rows, rounds with and without the log alternating; the best round's CPU time per
request each way (with ``--database postgresql``, the median of PostgreSQL's CPU beside it: the
database's share and this process's, apart). CPU time barely moves with the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import FastAPI

sys.path.insert(0, str(Path(__file__).resolve().parent))

import custom_data as cd  # noqa: E402

RESULTS = cd.ROOT / "bench" / "results" / "audit_cost.jsonl"
PATCH = ("PATCH", "/v1/data/customers/{id}", '{"score": {score}}')


def _no_event(*_args: Any, **_kwargs: Any) -> None:
    return None


def switch_audit(on: bool) -> None:
    """Whether requests open audit events (the only place they are opened)."""
    from callplane.audit import requests
    from callplane.dashboard import routing
    from callplane.http import pipeline

    opened = requests.open_event if on else _no_event
    pipeline.open_event = opened  # type: ignore[assignment]
    routing.open_event = opened  # type: ignore[assignment]


def with_audit() -> FastAPI:
    """Factory for uvicorn: the app as ``callplane serve`` builds it."""
    from callplane.app import create_app_from_env

    return create_app_from_env()


def seal_loop() -> None:
    """What a worker's AUDIT_SEAL task does, alone: seal every ``INTERVAL_SECONDS``."""
    from callplane.audit.seal import INTERVAL_SECONDS, seal
    from callplane.kit.db import Database
    from callplane.settings import Settings

    async def run() -> None:
        db = Database(Settings().database_url, pool_size=1)
        while True:
            started = time.perf_counter()
            try:
                sealed = await seal(db)
            except Exception:  # as the worker's task does: logged, tried again next turn
                traceback.print_exc()
            else:
                took = time.perf_counter() - started
                print(f"sealed {sealed} in {took:.3f} s", flush=True)
            await asyncio.sleep(INTERVAL_SECONDS)

    asyncio.run(run())


def without_audit() -> FastAPI:
    """Factory for uvicorn: the same app, whose requests never open an audit event."""
    from callplane.app import create_app_from_env

    switch_audit(False)
    return create_app_from_env()


# --- side by side, over HTTP ---------------------------------------------------------------


class Server:
    def __init__(self, name: str, args: argparse.Namespace, source: Path) -> None:
        self.name = name
        self.work = Path(tempfile.mkdtemp(prefix=f"callplane-bench-audit-{name}-"))
        self.postgres = args.database == "postgresql"
        self.pg_name = ""
        if self.postgres:
            self.pg_name = f"callplane_bench_audit_{os.getpid()}_{name}"
            asyncio.run(cd._pg_admin(f'DROP DATABASE IF EXISTS "{self.pg_name}"'))
            asyncio.run(cd._pg_admin(f'CREATE DATABASE "{self.pg_name}"'))
        database = self.work / "bench.db"
        self.dsn = f"{cd.PG_ADMIN}/{self.pg_name}"
        self.env = {
            **os.environ,
            "CALLPLANE_DATABASE_URL": self.dsn if self.postgres else f"sqlite:///{database}",
            "CALLPLANE_STORAGE_URL": f"file://{self.work / 'recordings'}",
            "CALLPLANE_RATE_LIMIT": "1000000000/minute",
            "CALLPLANE_AUTH_FAILURE_LIMIT": "100/minute",
            "CALLPLANE_LOG_LEVEL": "warning",
            "CALLPLANE_WORKER": "off",
        }
        self.env.pop("CALLPLANE_REDIS_URL", None)
        callplane = str(cd.BIN / "callplane")
        subprocess.run([callplane, "migrate"], env=self.env, check=True, capture_output=True)
        org = json.loads(
            subprocess.run(
                [callplane, "orgs", "create", "Bench", "--json"],
                env=self.env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        self.key = str(org["api_key"])
        self.port = cd.free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        factory = "with_audit" if name == "on" else "without_audit"
        cmd = [str(cd.BIN / "uvicorn"), f"audit_cost:{factory}", "--factory"]
        cmd += ["--app-dir", str(cd.ROOT / "bench"), "--host", "127.0.0.1"]
        cmd += ["--port", str(self.port), "--workers", str(args.workers), "--loop", "uvloop"]
        cmd += ["--http", "callplane.server:JsonHttpToolsProtocol", "--no-access-log"]
        cmd += ["--log-level", "warning"]
        self.process = cd.start(cmd, self.env, self.work / "serve.log")
        self.sealer = None
        if name == "on" and not args.no_seal:
            sealer = [sys.executable, str(Path(__file__).resolve()), "--seal-loop"]
            self.sealer = cd.start(sealer, self.env, self.work / "seal.log")
        cd.wait_ready(f"{self.base}/v1/openapi.json")
        table = cd.request("POST", f"{self.base}/v1/data/tables", self.key, cd.CUSTOMERS)["table"]
        assert isinstance(table, dict)
        physical = f"udt_{int(table['id'])}"
        if self.postgres:
            count = asyncio.run(cd._copy_rows_pg(self.dsn, physical, org["id"], source))
        else:
            count = cd.copy_rows(database, physical, org["id"], source)
        cd.log(f"{name}: {count} rows in {physical}, serving on {self.base}")

    def close(self, keep: bool) -> None:
        cd.stop(self.process)
        if self.sealer is not None:
            cd.stop(self.sealer)
        if self.postgres:
            cd.drop_pg_database(self.pg_name)
        if keep:
            cd.log(f"kept {self.work}")
        else:
            shutil.rmtree(self.work, ignore_errors=True)


def _cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of a process and its children still running (the workers)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for task in [pid, *_children(pid)]:
        try:
            fields = Path(f"/proc/{task}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def _machine_busy() -> float:
    """Seconds the machine's CPUs were busy (user, nice, system, irq, softirq) since boot."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = (int(f) for f in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def _postgres_cpu() -> float:
    """CPU time of every PostgreSQL process (0 where none runs: SQLite)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if "(postgres)" not in stat:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def _children(pid: int) -> list[int]:
    try:
        found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(child) for child in found]


def wrk(server: Server, args: argparse.Namespace, duration: int) -> dict[str, Any]:
    method, path, body = PATCH
    cmd = ["wrk", f"-t{args.threads}", f"-c{args.connections}", f"-d{duration}s", "--latency"]
    cmd += ["--timeout", "5s", "-s", str(cd.SHARED / "wrk" / "bench.lua"), server.base]
    cmd += ["--", method, path, body]
    env = {**os.environ, "BENCH_AUTH": f"Bearer {server.key}", "ID_FMT": "%d", "ID_MAX": "100000"}
    used = _cpu_seconds(server.process.pid)
    pg = _postgres_cpu()
    machine = _machine_busy()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    used = _cpu_seconds(server.process.pid) - used
    pg = _postgres_cpu() - pg
    machine = _machine_busy() - machine
    for line in out.splitlines():
        if line.startswith("BENCH_JSON "):
            result: dict[str, Any] = json.loads(line.removeprefix("BENCH_JSON "))
            # What the server spent on each request: barely moved by the machine's load.
            result["server_cpu_us"] = round(used / max(result["requests"], 1) * 1e6, 1)
            # PostgreSQL's processes, all of them: on a machine doing nothing else, the server's.
            result["pg_cpu_us"] = round(pg / max(result["requests"], 1) * 1e6, 1)
            # Everything this machine ran (wrk, servers, sealer, PostgreSQL), steal left out:
            # on a machine busy only with the bench, what bounds its req/s.
            result["machine_cpu_us"] = round(machine / max(result["requests"], 1) * 1e6, 1)
            errors = sum(result[k] for k in ("err_connect", "err_read", "err_write", "non_2xx"))
            if errors:
                raise RuntimeError(f"{server.name}: {errors} errors or non-2xx answers\n{out}")
            return result
    raise RuntimeError(f"wrk gave no result:\n{out}")


def audit_events(server: Server, sealed: bool = False) -> int:
    """Events written (sealed or pending), or only those sealed."""
    sql = "SELECT count(*) FROM audit_events"
    if not sealed:
        sql = "SELECT (SELECT count(*) FROM audit_events) + (SELECT count(*) FROM audit_pending)"
    if server.postgres:
        import asyncpg

        async def count() -> int:
            conn = await asyncpg.connect(server.dsn)
            try:
                return int(await conn.fetchval(sql))
            finally:
                await conn.close()

        return asyncio.run(count())
    import sqlite3

    conn = sqlite3.connect(server.work / "bench.db")
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


def side_by_side(args: argparse.Namespace) -> None:
    source = cd.dataset()
    servers = {name: Server(name, args, source) for name in ("on", "off")}
    rounds: list[dict[str, Any]] = []
    try:
        for server in servers.values():
            wrk(server, args, args.warmup)
        for number in range(args.rounds):
            order = ("on", "off") if number % 2 == 0 else ("off", "on")
            measured: dict[str, Any] = {}
            for name in order:
                load = os.getloadavg()[0]
                result = wrk(servers[name], args, args.duration)
                measured[name] = {**result, "load1": round(load, 2)}
            ratio = measured["on"]["rps"] / measured["off"]["rps"]
            rounds.append({"round": number + 1, "ratio": ratio, **measured})
            cd.log(
                f"round {number + 1}: with {measured['on']['rps']:7.1f} req/s "
                f"(p50 {measured['on']['p50_us'] / 1000:5.1f} ms, load {measured['on']['load1']})"
                f"  without {measured['off']['rps']:7.1f} req/s "
                f"(p50 {measured['off']['p50_us'] / 1000:5.1f} ms, "
                f"load {measured['off']['load1']})  ratio {ratio:.3f}  server CPU per request "
                f"{measured['on']['server_cpu_us']:.0f} / {measured['off']['server_cpu_us']:.0f} µs"
                f", machine CPU {measured['on']['machine_cpu_us']:.0f} / "
                f"{measured['off']['machine_cpu_us']:.0f} µs"
                + (
                    f", PostgreSQL CPU {measured['on']['pg_cpu_us']:.0f} / "
                    f"{measured['off']['pg_cpu_us']:.0f} µs"
                    if args.database == "postgresql"
                    else ""
                )
            )
        # The log was written: every PATCH with it left an event, none without it.
        events = {name: audit_events(server) for name, server in servers.items()}
        time.sleep(3)  # the sealer's next turn
        sealed = audit_events(servers["on"], sealed=True)
        cd.log(f"audit events: with {events['on']} ({sealed} sealed), without {events['off']}")
    finally:
        for server in servers.values():
            server.close(args.keep)
    ratios = [r["ratio"] for r in rounds]
    pooled = sum(r["on"]["rps"] for r in rounds) / sum(r["off"]["rps"] for r in rounds)
    cpu_ratio = statistics.median(
        r["on"]["server_cpu_us"] / r["off"]["server_cpu_us"] for r in rounds
    )
    machine_ratio = statistics.median(
        r["off"]["machine_cpu_us"] / r["on"]["machine_cpu_us"] for r in rounds
    )
    summary = {
        "ts": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": cd.commit(),
        "label": args.label,
        "database": args.database,
        "workers": args.workers,
        "median_ratio": round(statistics.median(ratios), 3),
        "pooled_ratio": round(pooled, 3),
        "server_cpu_ratio": round(cpu_ratio, 3),
        "machine_cpu_ratio": round(machine_ratio, 3),
        "ratios": [round(r, 3) for r in ratios],
        "load1": [r[name]["load1"] for r in rounds for name in ("on", "off")],
        "rounds": rounds,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as out:
        out.write(json.dumps(summary) + "\n")
    cd.log(
        f"{args.database}, commit {summary['commit']} {args.label}: with / without the log = "
        f"{summary['median_ratio']} (median of {len(ratios)} rounds), {summary['pooled_ratio']} "
        f"(pooled); cost {1 - summary['median_ratio']:.1%}; server CPU per request with / "
        f"without {summary['server_cpu_ratio']}; machine CPU per request without / with "
        f"{summary['machine_cpu_ratio']}; 1-min load "
        f"{min(summary['load1'])}-{max(summary['load1'])}"
    )


# --- CPU per request, in process -----------------------------------------------------------


async def cpu(requests: int, rounds: int, postgres: bool) -> None:
    import fast_paths_cpu as fp

    from callplane.audit.seal import seal

    async with fp.app_with_customers(postgres) as (app, _org, headers):

        async def patch(n: int) -> int:
            payload = b'{"score": %d}' % (n % 1000)
            path = f"/v1/data/customers/{n % 1000 + 1}"
            return await fp.call(app, "PATCH", path, b"", payload, headers)

        for on in (True, False):
            switch_audit(on)
            for n in range(300):
                assert await patch(n) == 200
        best: dict[bool, list[float]] = {True: [], False: []}
        database: dict[bool, list[float]] = {True: [], False: []}
        for number in range(rounds):
            for on in (True, False) if number % 2 == 0 else (False, True):
                switch_audit(on)
                used, pg = time.process_time(), _postgres_cpu()
                for n in range(requests):
                    await patch(n)
                if on:  # what a worker's sealing costs the events of this round
                    await seal(app.state.runtime.db)
                best[on].append((time.process_time() - used) / requests * 1e6)
                database[on].append((_postgres_cpu() - pg) / requests * 1e6)
        switch_audit(True)
    on_us, off_us = min(best[True]), min(best[False])
    result = {
        "patch_cpu_us_with_log": round(on_us, 1),
        "patch_cpu_us_without_log": round(off_us, 1),
        "ratio_cpu": round(on_us / off_us, 3),
    }
    if postgres:  # the database's share, apart from this process's
        pg_on, pg_off = statistics.median(database[True]), statistics.median(database[False])
        result |= {
            "postgresql_cpu_us_with_log": round(pg_on, 1),
            "postgresql_cpu_us_without_log": round(pg_off, 1),
            "ratio_both": round((on_us + pg_on) / (off_us + pg_off), 3),
        }
    print(json.dumps({**result, "load1": round(os.getloadavg()[0], 2)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--duration", type=int, default=8, help="seconds of each measured run")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--keep", action="store_true", help="keep the servers' temp dirs")
    parser.add_argument(
        "--label", default="", help="what was measured, e.g. the tree PYTHONPATH names first"
    )
    parser.add_argument(
        "--no-seal",
        action="store_true",
        help="no sealing beside the server with the log: what the writes cost alone",
    )
    parser.add_argument("--cpu", action="store_true", help="CPU per PATCH in process instead")
    parser.add_argument("--requests", type=int, default=500, help="--cpu: PATCHes per round")
    parser.add_argument("--seal-loop", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.seal_loop:
        seal_loop()
        return
    if args.cpu:
        asyncio.run(cpu(args.requests, args.rounds, args.database == "postgresql"))
        return
    if shutil.which("wrk") is None:
        sys.exit("wrk is required: apt-get install -y wrk")
    side_by_side(args)


if __name__ == "__main__":
    main()
