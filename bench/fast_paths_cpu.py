"""CPU per request of the fast paths, in process, one request at a time (no server, no wrk).

    PYTHONPATH=src .venv/bin/python bench/fast_paths_cpu.py [--requests 500]

The whole ASGI app (every middleware, authentication, rate limit, SQLite inline) is called
directly with a plain scope; each kind runs 200 warm-up requests, then 5 rounds of --requests,
and the best round's wall and CPU time per request (``time.process_time``) are printed as JSON.
CPU time barely moves with the machine's load, where wrk's req/s on a shared 2-core VM can move
by 2x from one run to the next: it is the number to compare two trees by, alternating runs
(``PYTHONPATH=<tree>/src``). Data: 1,000 records of a small table, 40 external calls of 3 legs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from callplane.app import create_app
from callplane.kit.db import Database
from callplane.loader import load_document
from callplane.migrate import upgrade
from callplane.orgs.service import create_organization, issue_key
from callplane.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))

from external_calls import CALL, document  # noqa: E402

Headers = list[tuple[bytes, bytes]]


async def call(
    app: Any, method: str, path: str, query: bytes, body: bytes, headers: Headers
) -> int:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": [(b"host", b"bench"), *headers],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    status: list[int] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    await app(scope, receive, send)
    return status[0]


@contextlib.asynccontextmanager
async def app_with_customers(
    postgres: bool = False,
) -> AsyncIterator[tuple[Any, Any, list[tuple[bytes, bytes]]]]:
    """The app, started on a fresh SQLite file (or a fresh PostgreSQL database), with one
    organization (its key in the headers) and 1,000 records of a small table: (app,
    organization, headers). Other in-process benches (``audit_cost.py --cpu``) measure on the
    same data."""
    from custom_data import PG_ADMIN, _pg_admin, drop_pg_database

    work = Path(tempfile.mkdtemp(prefix="callplane-bench-cpu-"))
    url = f"sqlite:///{work / 'bench.db'}"
    pg_name = f"callplane_bench_cpu_{work.name.rsplit('-', 1)[-1].lower()}"
    if postgres:
        await _pg_admin(f'CREATE DATABASE "{pg_name}"')
        url = f"{PG_ADMIN}/{pg_name}"
    db = Database(url, pool_size=1)
    await upgrade(db)
    await db.dispose()
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=url,
        log_level="warning",
        signing_key="bench",
        worker="off",
        storage_url=f"file://{work / 'recordings'}",
        rate_limit="1000000000/minute",
    )
    app = create_app(settings)
    runtime = app.state.runtime
    try:
        async with app.router.lifespan_context(app):
            async with runtime.db.session(write=True) as session:
                org = await create_organization(session, "Bench")
                key = await issue_key(session, org.id)
                await session.commit()
            headers = [
                (b"authorization", f"Bearer {key.api_key}".encode()),
                (b"content-type", b"application/json"),
            ]
            columns = [
                {"name": "name", "type": "TEXT"},
                {"name": "score", "type": "INTEGER", "indexed": True},
                {"name": "active", "type": "BOOLEAN"},
            ]
            table = json.dumps({"name": "customers", "columns": columns}).encode()
            assert await call(app, "POST", "/v1/data/tables", b"", table, headers) == 201
            rows = [{"name": f"n{i}", "score": i % 100, "active": i % 2 == 0} for i in range(1000)]
            body = json.dumps({"records": rows}).encode()
            assert await call(app, "POST", "/v1/data/customers", b"", body, headers) == 201
            yield app, org, headers
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if postgres:
            await asyncio.to_thread(drop_pg_database, pg_name)


async def main(requests: int) -> None:
    async with app_with_customers() as (app, org, headers):
        runtime = app.state.runtime
        calls = document(40)
        calls.pop("voices")
        async with runtime.db.session(write=True) as session:
            await load_document(session, runtime.settings, org.id, calls)
            await session.commit()
        listing = b"page=1&per_page=50&sort_by=score&sort_direction=desc&active=true"
        kinds = {
            "GET record": ("GET", "/v1/data/customers/7", b"", b""),
            "PATCH record": ("PATCH", "/v1/data/customers/7", b"", b'{"score": 5}'),
            "GET list": ("GET", "/v1/data/customers", listing, b""),
            "GET external call": ("GET", f"/v1/external_calls/{CALL}", b"", b""),
            "GET external calls": ("GET", "/v1/external_calls", b"page_size=20", b""),
            "GET voices (no fast path)": ("GET", "/v1/voices", b"", b""),
        }
        out = {}
        for name, (method, path, query, payload) in kinds.items():
            for _ in range(200):
                status = await call(app, method, path, query, payload, headers)
            assert status == 200, (name, status)
            wall, cpu = [], []
            for _ in range(5):
                started, used = time.perf_counter(), time.process_time()
                for _ in range(requests):
                    await call(app, method, path, query, payload, headers)
                wall.append((time.perf_counter() - started) / requests * 1e6)
                cpu.append((time.process_time() - used) / requests * 1e6)
            out[name] = {"wall_us": round(min(wall), 1), "cpu_us": round(min(cpu), 1)}
        print(json.dumps(out))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--requests", type=int, default=500)
    asyncio.run(main(parser.parse_args().requests))
