"""`callplane load` of a large call history: calls per second and peak memory, on both databases.

The document (deterministic, seed 16) holds a few agents, voices and call tags and N calls
(300,000 by default) shaped like an imported history: numbers, a finished status with start, end
and duration, a creation time, a four-line transcript, two params and an external identifier
(three entries of the find-by-attribute index per call), and a tag on every third call.

For each database, a fresh one: SQLite, a new file in a temp dir; PostgreSQL, a database created
(and dropped afterwards) at 127.0.0.1:5432 with trust auth. `callplane migrate` and
`callplane orgs create` run first, untimed; then `callplane load --org ID FILE` is timed end to
end (process start, JSON parse, validation, inserts, commit) and its peak RSS read from
``resource.getrusage(RUSAGE_CHILDREN)`` in a fresh interpreter whose only child it is. Prints one
line per database and, with ``--json``, a JSON object.

    .venv/bin/python bench/load.py [--calls 300000] [--only sqlite|postgresql] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg

BIN = Path(sys.executable).parent
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
STATUSES = ["completed"] * 6 + ["no_answer", "busy", "failed", "cancelled"]


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def document(calls: int, seed: int = 16) -> dict[str, object]:
    rng = random.Random(seed)
    agents = [{"id": i + 1, "uuid": _uuid(rng), "name": f"agent {i + 1}"} for i in range(5)]
    voices = [{"id": _uuid(rng), "name": f"voice {i + 1}"} for i in range(3)]
    tags = [{"id": _uuid(rng), "name": f"tag {i + 1}"} for i in range(4)]
    start = datetime(2025, 1, 1, tzinfo=UTC)
    items = []
    for n in range(calls):
        created = start + timedelta(seconds=n * 97 + rng.randrange(60))
        started = created + timedelta(seconds=rng.randrange(5, 40))
        duration = rng.randrange(10, 900)
        status = STATUSES[n % len(STATUSES)]
        item: dict[str, object] = {
            "id": _uuid(rng),
            "from_number": "+14155550100",
            "to_number": f"+1212555{n % 10000:04d}",
            "status": status,
            "direction": "outbound" if n % 4 else "inbound",
            "created_at": created.isoformat(),
            "agent_id": agents[n % len(agents)]["uuid"],
            "voice_id": voices[n % len(voices)]["id"],
            "language": "en",
            "params": {"order": f"A-{n:07d}", "attempt": 1 + n % 3},
            "external_identifiers": {"crm_id": f"crm-{rng.randrange(10**9)}"},
        }
        if status == "completed":
            item.update(
                started_at=started.isoformat(),
                ended_at=(started + timedelta(seconds=duration)).isoformat(),
                duration=duration,
                answered_by="human",
                summary="The caller asked about an order; the agent confirmed the delivery.",
                transcripts=[
                    {"role": "assistant", "text": "Hello, how can I help?", "timestamp": 0.4},
                    {"role": "user", "text": f"Where is order A-{n:07d}?", "timestamp": 2.1},
                    {"role": "assistant", "text": "It ships tomorrow.", "timestamp": 4.8},
                    {"role": "user", "text": "Thanks, bye.", "timestamp": 6.0},
                ],
            )
        if n % 3 == 0:
            item["tags"] = [tags[n % len(tags)]["id"]]
        items.append(item)
    return {"agents": agents, "voices": voices, "call_tags": tags, "calls": items}


_MEASURE = """
import resource, subprocess, sys, time
t = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
elapsed = time.perf_counter() - t
print(elapsed, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def _measure(cmd: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Seconds and peak RSS (KiB) of ``cmd``, run as the only child of a fresh interpreter so
    RUSAGE_CHILDREN's maximum is this command's own."""
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, *cmd], env=env, check=True, capture_output=True, text=True
    ).stdout.split()
    return float(out[0]), int(out[1])


def _run(cmd: list[str], env: dict[str, str]) -> str:
    return subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout


def bench_one(url: str, path: Path, calls: int) -> dict[str, float]:
    env = {**os.environ, "CALLPLANE_DATABASE_URL": url}
    cli = str(BIN / "callplane")
    _run([cli, "migrate"], env)
    org = json.loads(_run([cli, "orgs", "create", "bench", "--json"], env))["id"]
    seconds, rss_kib = _measure([cli, "load", "--org", str(org), str(path)], env)
    return {"seconds": seconds, "calls_per_s": calls / seconds, "peak_rss_mib": rss_kib / 1024}


def _psql(sql: str) -> None:
    async def run() -> None:
        conn = await asyncpg.connect(PG_ADMIN)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--calls", type=int, default=300_000)
    parser.add_argument("--only", choices=["sqlite", "postgresql"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="callplane-load-") as tmp:
        path = Path(tmp) / "calls.json"
        path.write_text(json.dumps(document(args.calls)))
        size_mb = path.stat().st_size / 1e6
        print(f"document: {args.calls} calls, {size_mb:.0f} MB", file=sys.stderr)
        if args.only in (None, "sqlite"):
            db = Path(tmp) / "load.db"
            results["sqlite"] = bench_one(f"sqlite:///{db}", path, args.calls)
        if args.only in (None, "postgresql"):
            name = f"callplane_bench_load_{os.getpid()}"
            _psql(f"CREATE DATABASE {name}")
            try:
                url = f"postgresql://postgres@127.0.0.1:5432/{name}"
                results["postgresql"] = bench_one(url, path, args.calls)
            finally:
                _psql(f"DROP DATABASE {name} WITH (FORCE)")
    for backend, r in results.items():
        print(
            f"{backend:10} {args.calls} calls in {r['seconds']:.1f} s = "
            f"{r['calls_per_s']:,.0f} calls/s, peak RSS {r['peak_rss_mib']:.0f} MiB"
        )
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
