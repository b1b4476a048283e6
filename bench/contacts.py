"""Benchmark: PUT and GET /v1/contacts/{phoneNumber}/data against a floor on the same stack.

    .venv/bin/python bench/contacts.py [--workers 2] [--duration 8] [--connections 32]
                                       [--contacts 1000] [--driver wrk|httpx]

The floor is ``create_floor_app`` below: the same uvicorn (uvloop, httptools), FastAPI and
callplane ``Database`` (same engine, pool, SQLite pragmas and BEGIN IMMEDIATE write sessions) on
the same SQLite file and table, doing the least a contact-data store can do: PUT is one
``INSERT … ON CONFLICT DO UPDATE … RETURNING revision`` of the raw body, GET one primary-key
SELECT returning the stored text. No authentication, rate limiting, identifier parsing, body
validation, expiry or response model: what callplane adds on top is what the ratios measure.

Both apps serve 127.0.0.1 in turn with the same worker count; callplane runs with
authentication and a rate limit high enough never to reject. Requests spread over ``--contacts``
numbers (pre-loaded for GET). Load comes from wrk (Debian package ``wrk``) or, without it, an
async httpx client with bounded concurrency; every loop is bounded in time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fastapi import FastAPI  # noqa: E402
from servers import BIN, ROOT, load_parser, run, run_wrk, serve, stop, wait_ready  # noqa: E402
from sqlalchemy import select
from starlette.requests import Request
from starlette.responses import Response

from callplane.kit.db import Database, dialect_insert
from callplane.models.base import utcnow
from callplane.models.contacts import Contact  # noqa: E402

BODY = {
    "data": {
        "name": "Dana Whitfield",
        "tier": "gold",
        "last_order": "A-1042",
        "open_ticket": True,
        "visits": 12,
    },
    "ttlSeconds": 86400,
}


def number(i: int) -> str:
    return f"+1415555{i:04d}"


# --- the floor app (imported by uvicorn as ``contacts:create_floor_app``) ---------------------


def create_floor_app() -> FastAPI:
    table = Contact.__table__
    organization_id = int(os.environ["BENCH_ORG_ID"])
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    state: dict[str, Database] = {}

    def database() -> Database:
        if "db" not in state:  # after the worker fork
            state["db"] = Database(os.environ["CALLPLANE_DATABASE_URL"])
        return state["db"]

    @app.get("/static")
    async def static() -> Response:
        return Response(b'{"status":"ok"}', media_type="application/json")

    @app.put("/floor/contacts/{key}")
    async def put(key: str, request: Request) -> Response:
        body = await request.body()
        now = utcnow()
        async with database().session(write=True) as session:
            insert = dialect_insert(session, table).values(
                organization_id=organization_id,
                identifier=key,
                data=body.decode(),
                revision=1,
                created_at=now,
                updated_at=now,
            )
            revision = (
                await session.execute(
                    insert.on_conflict_do_update(
                        index_elements=["organization_id", "identifier"],
                        set_={"data": insert.excluded.data, "revision": table.c.revision + 1},
                    ).returning(table.c.revision)
                )
            ).scalar_one()
            await session.commit()
        return Response(b'{"revision":%d}' % revision, media_type="application/json")

    @app.get("/floor/contacts/{key}")
    async def get(key: str) -> Response:
        async with database().session(write=False) as session:
            data = await session.scalar(
                select(table.c.data).where(
                    table.c.organization_id == organization_id, table.c.identifier == key
                )
            )
        if data is None:
            return Response(b'{"error":"not found"}', 404, media_type="application/json")
        return Response(data.encode(), media_type="application/json")

    return app


# --- servers ----------------------------------------------------------------------------------


# --- load drivers -----------------------------------------------------------------------------

_LUA = """
wrk.method = "%(method)s"
wrk.headers["Content-Type"] = "application/json"
if wrk.method == "PUT" then wrk.body = [==[%(body)s]==] end
request = function()
  local i = math.random(0, %(contacts)d - 1)
  return wrk.format(nil, "%(prefix)s" .. string.format("%%04d", i) .. "%(suffix)s")
end
"""


def drive_wrk(
    base: str,
    method: str,
    template: str,
    headers: dict[str, str],
    args: argparse.Namespace,
    work: Path,
    duration: int,
) -> dict[str, float]:
    prefix, suffix = template.split("{i}")
    script = work / f"{method.lower()}.lua"
    script.write_text(
        _LUA
        % {
            "method": method,
            "body": json.dumps(BODY),
            "contacts": args.contacts,
            "prefix": prefix,
            "suffix": suffix,
        }
    )
    return run_wrk(
        base,
        threads=args.threads,
        connections=args.connections,
        duration=duration,
        headers=headers,
        script=script,
    )


def drive_httpx(
    base: str,
    method: str,
    template: str,
    headers: dict[str, str],
    args: argparse.Namespace,
    _work: Path,
    duration: int,
) -> dict[str, float]:
    import httpx

    async def go() -> dict[str, float]:
        latencies: list[float] = []
        failures = 0
        deadline = time.monotonic() + duration
        limits = httpx.Limits(max_connections=args.connections)
        async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits) as client:

            async def worker() -> None:
                nonlocal failures
                while time.monotonic() < deadline:
                    path = template.replace("{i}", f"{random.randrange(args.contacts):04d}")
                    started = time.perf_counter()
                    response = await client.request(
                        method, path, json=BODY if method == "PUT" else None
                    )
                    latencies.append((time.perf_counter() - started) * 1000)
                    failures += response.status_code >= 300

            started = time.monotonic()
            await asyncio.gather(*(worker() for _ in range(args.connections)))
            elapsed = time.monotonic() - started
        if failures:
            raise RuntimeError(f"{method} {template}: {failures} non-2xx responses")
        latencies.sort()
        return {
            "rps": len(latencies) / elapsed,
            "p50": latencies[len(latencies) // 2],
            "p99": latencies[int(len(latencies) * 0.99)],
        }

    return asyncio.run(go())


# --- main -------------------------------------------------------------------------------------


def main() -> None:
    parser = load_parser(__doc__, port=8182)
    parser.add_argument("--contacts", type=int, default=1000, help="distinct numbers (<= 10000)")
    parser.add_argument("--driver", choices=["wrk", "httpx"], default=None)
    args = parser.parse_args()
    args.contacts = max(1, min(args.contacts, 10_000))
    driver_name = args.driver or ("wrk" if shutil.which("wrk") else "httpx")
    drive = drive_wrk if driver_name == "wrk" else drive_httpx

    work = Path(tempfile.mkdtemp(prefix="callplane-bench-contacts-"))
    env = {
        **os.environ,
        "CALLPLANE_DATABASE_URL": f"sqlite:///{work / 'bench.db'}",
        "CALLPLANE_RATE_LIMIT": "100000000/minute",
        "CALLPLANE_LOG_LEVEL": "warning",
        "CALLPLANE_STORAGE_URL": f"file://{work / 'recordings'}",
        "PYTHONPATH": str(ROOT / "bench"),
    }
    try:
        callplane = str(BIN / "callplane")
        org = json.loads(run([callplane, "orgs", "create", "Bench", "--json"], env))
        env["BENCH_ORG_ID"] = str(org["id"])
        document = {
            "contacts": [
                {"phoneNumber": number(i), "data": BODY["data"]} for i in range(args.contacts)
            ]
        }
        (work / "contacts.json").write_text(json.dumps(document))
        run([callplane, "load", "--org", str(org["id"]), str(work / "contacts.json")], env)
        auth = {"Authorization": f"Bearer {org['api_key']}"}

        targets = [
            (
                "floor",
                "contacts:create_floor_app",
                "/static",
                [
                    ("floor PUT (one upsert)", "PUT", "/floor/contacts/%2B1415555{i}", {}),
                    ("floor GET (one select)", "GET", "/floor/contacts/%2B1415555{i}", {}),
                ],
            ),
            (
                "callplane",
                "callplane.app:create_app_from_env",
                "/healthz",
                [
                    ("callplane PUT contact data", "PUT", "/v1/contacts/%2B1415555{i}/data", auth),
                    ("callplane GET contact data", "GET", "/v1/contacts/%2B1415555{i}/data", auth),
                ],
            ),
        ]
        results: dict[str, dict[str, float]] = {}
        for _name, app, ready_path, measurements in targets:
            server = serve(app, args.port, args.workers, env)
            try:
                base = f"http://127.0.0.1:{args.port}"
                wait_ready(base + ready_path)
                for label, method, template, headers in measurements:
                    drive(base, method, template, headers, args, work, min(2, args.duration))
                    results[label] = drive(
                        base, method, template, headers, args, work, args.duration
                    )
            finally:
                stop(server)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(
        f"\ndriver={driver_name} workers={args.workers} connections={args.connections} "
        f"duration={args.duration}s contacts={args.contacts} (SQLite)"
    )
    print(f"{'target':<30} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8}")
    for label, r in results.items():
        print(f"{label:<30} {r['rps']:>9.0f} {r['p50']:>8.2f} {r['p99']:>8.2f}")
    for method in ("PUT", "GET"):
        ours = results[f"callplane {method} contact data"]["rps"]
        floor = next(v["rps"] for k, v in results.items() if k.startswith(f"floor {method}"))
        print(f"ratio callplane / floor, {method}: {ours / floor:.2f}")


if __name__ == "__main__":
    main()
