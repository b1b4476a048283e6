"""Benchmark: does GET /v1/calls/find_by_attribute stay flat as one organization's calls grow?

    .venv/bin/python bench/find_by_attribute.py [--sizes 10000,100000,1000000]
        [--backend sqlite|postgresql] [--postgres-url postgresql://postgres@127.0.0.1:5432/postgres]
        [--lookups 300] [--others 0.1]

One database grows through the sizes (rows are only added): at each size the measured
organization holds that many calls, and three other organizations hold ``--others`` times as many
calls *with the same params and external identifiers*, so the index has to separate
organizations, not just values. Rows are bulk-inserted with SQLAlchemy Core, attribute index
rows included (built by the same ``attribute_rows`` the API uses).

At each size it times, in process, over the same app the server runs:
- ``service``: ``find_call_by_attribute`` on one session (the lookup and the row read);
- ``http full`` / ``http fields``: the whole request through the ASGI app (auth, routing,
  serialization), without and with a ``fields`` projection;
- ``http both``: both pairs (param and external identifier) at once;
- ``http miss``: a value no call has (404).
Lookups pick random calls across the whole range. Prints median and p95 in microseconds and
each size's median over the smallest size's (the acceptance bar: at most 2x at 1M vs 10k).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from callplane.app import create_app  # noqa: E402
from callplane.calls.attributes import attribute_rows  # noqa: E402
from callplane.calls.find import find_call_by_attribute  # noqa: E402
from callplane.kit.db import Database  # noqa: E402
from callplane.migrate import upgrade  # noqa: E402
from callplane.orgs.service import create_organization, issue_key  # noqa: E402
from callplane.settings import Settings  # noqa: E402

BATCH = 10_000
EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
OTHER_ORGS = 3
#: An authenticated request whose cost does not depend on calls: the same-moment baseline.
FLOOR = "floor voices"


CALL_COLUMNS = (
    "organization_id", "id", "simple_uuid", "to_number", "status", "transcripts", "transferred",
    "direction", "params", "external_identifiers", "analyzers", "analysis_results", "keyterms",
    "summary", "created_at", "updated_at", "event_sequence",
)  # fmt: skip
ATTRIBUTE_COLUMNS = (
    "organization_id", "call_uuid", "source", "key_digest", "value_digest", "created_at",
)  # fmt: skip
TRANSCRIPT = json.dumps([{"role": "agent", "text": "Hello"}])


def call_rows(
    org_id: int, start: int, stop: int, seed: int, backend: str
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Rows as the driver takes them (what the column types would produce), for speed."""
    sqlite = backend == "sqlite"

    def as_uuid(value: uuid.UUID) -> Any:
        return value.hex if sqlite else value

    def as_time(value: datetime) -> Any:
        return value.replace(tzinfo=None).isoformat(" ") if sqlite else value

    calls, attributes = [], []
    for i in range(start, stop):
        call_id = uuid.UUID(int=(seed << 64) | i, version=4)
        created_at = EPOCH + timedelta(seconds=i)
        params = {"order_id": f"ord-{i}", "attempt": i % 7, "vip": i % 2 == 0}
        external = {"crm_id": f"crm-{i}"}
        at = as_time(created_at)
        calls.append(
            (
                org_id,
                as_uuid(call_id),
                as_uuid(uuid.uuid4()),
                "+14155550123",
                "completed",
                TRANSCRIPT,
                False,
                "outbound",
                json.dumps(params),
                json.dumps(external),
                "[]",
                "[]",
                "[]",
                f"Call {i}",
                at,
                at,
                0,
            )  # fmt: skip
        )
        for row in attribute_rows(org_id, call_id, created_at, params, external):
            attributes.append(
                (
                    org_id,
                    as_uuid(call_id),
                    row["source"],
                    row["key_digest"],
                    row["value_digest"],
                    at,
                )
            )
    return calls, attributes


def insert_sql(backend: str, table: str, columns: tuple[str, ...]) -> str:
    if backend == "sqlite":
        marks = ", ".join("?" for _ in columns)
    else:
        marks = ", ".join(f"${n}" for n in range(1, len(columns) + 1))
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"  # noqa: S608 (fixed names)


async def grow(db: Database, org_id: int, start: int, stop: int, seed: int) -> None:
    """Bulk insert straight through the driver (executemany), batch by batch."""
    calls_sql = insert_sql(db.backend, "calls", CALL_COLUMNS)
    attributes_sql = insert_sql(db.backend, "call_attributes", ATTRIBUTE_COLUMNS)
    for low in range(start, stop, BATCH):
        calls, attributes = call_rows(org_id, low, min(low + BATCH, stop), seed, db.backend)
        async with db.engine.begin() as conn:
            await conn.exec_driver_sql(calls_sql, calls)
            await conn.exec_driver_sql(attributes_sql, attributes)


async def timed(fn: Callable[[], Awaitable[Any]], rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        began = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - began) * 1e6)
    return samples


async def measure(
    app: Any, db: Database, org_id: int, key: str, size: int, lookups: int
) -> dict[str, list[float]]:
    rng = random.Random(size)
    headers = {"Authorization": f"Bearer {key}"}
    runtime = app.state.runtime
    results: dict[str, list[float]] = {}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://bench"
    ) as client:

        async def service_lookup() -> None:
            i = rng.randrange(size)
            async with db.session(write=False) as session:
                await find_call_by_attribute(
                    session, runtime, org_id, [("param", "order_id", f"ord-{i}")], None
                )

        async def http(query: Callable[[], dict[str, str]], expect: int) -> None:
            response = await client.get(
                "/v1/calls/find_by_attribute", params=query(), headers=headers
            )
            if response.status_code != expect:
                raise RuntimeError(f"{response.status_code}: {response.text[:200]}")

        def full() -> dict[str, str]:
            return {"param_key": "order_id", "param_value": f"ord-{rng.randrange(size)}"}

        def fields() -> dict[str, str]:
            return {**full(), "fields": "id,status,summary,params.order_id"}

        def both() -> dict[str, str]:
            i = rng.randrange(size)
            return {
                "param_key": "order_id",
                "param_value": f"ord-{i}",
                "external_identifier_key": "crm_id",
                "external_identifier_value": f"crm-{i}",
            }

        def miss() -> dict[str, str]:
            return {"param_key": "order_id", "param_value": f"nope-{rng.randrange(size)}"}

        async def floor() -> None:
            response = await client.get("/v1/voices", headers=headers)
            if response.status_code != 200:
                raise RuntimeError(f"{response.status_code}: {response.text[:200]}")

        cases: dict[str, Callable[[], Awaitable[None]]] = {
            "service": service_lookup,
            "http full": lambda: http(full, 200),
            "http fields": lambda: http(fields, 200),
            "http both": lambda: http(both, 200),
            "http miss": lambda: http(miss, 404),
            FLOOR: floor,
        }
        # Round-robin over the cases, so a busy moment of the machine hits them all alike.
        warmup = max(10, lookups // 10)
        results = {name: [] for name in cases}
        for round_ in range(warmup + lookups):
            for name, fn in cases.items():
                samples = await timed(fn, 1)
                if round_ >= warmup:
                    results[name].extend(samples)
    return results


async def main(args: argparse.Namespace) -> None:
    sizes = sorted(int(s) for s in args.sizes.split(","))
    admin_db: str | None = None
    scratch: str | None = None
    if args.backend == "postgresql":
        import asyncpg
        from sqlalchemy.engine import make_url

        admin_db = f"callplane_bench_{uuid.uuid4().hex[:10]}"
        admin = await asyncpg.connect(args.postgres_url)
        await admin.execute(f'CREATE DATABASE "{admin_db}"')
        await admin.close()
        url = make_url(args.postgres_url).set(database=admin_db).render_as_string(False)
    else:
        scratch = tempfile.mkdtemp(prefix="callplane-bench-find-")
        url = f"sqlite:///{scratch}/bench.db"
    try:
        await run(args, sizes, url)
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
        if admin_db:
            import asyncpg

            admin = await asyncpg.connect(args.postgres_url)
            await admin.execute(f'DROP DATABASE IF EXISTS "{admin_db}" WITH (FORCE)')
            await admin.close()


async def run(args: argparse.Namespace, sizes: list[int], url: str) -> None:
    db = Database(url, pool_size=4)
    await upgrade(db)
    async with db.session(write=True) as session:
        org = await create_organization(session, "measured")
        key = await issue_key(session, org.id)
        others = [(await create_organization(session, f"other {n}")).id for n in range(OTHER_ORGS)]
        await session.commit()

    settings = Settings(_env_file=None, database_url=url, rate_limit="off", log_level="warning")  # type: ignore[call-arg]
    app = create_app(settings)
    lifespan = app.router.lifespan_context(app)
    await lifespan.__aenter__()
    table: list[tuple[int, dict[str, list[float]]]] = []
    have = 0
    other_have = 0
    try:
        for size in sizes:
            began = time.perf_counter()
            await grow(db, org.id, have, size, seed=1)
            other_target = int(size * args.others)
            for n, other_id in enumerate(others):
                await grow(db, other_id, other_have, other_target, seed=2 + n)
            have, other_have = size, other_target
            if db.backend == "postgresql":
                async with db.engine.connect() as conn:
                    await conn.exec_driver_sql("ANALYZE")
            loaded = time.perf_counter() - began
            print(
                f"size {size:>9,}: loaded in {loaded:6.1f}s "
                f"(+{OTHER_ORGS} other orgs x {other_target:,} calls)",
                flush=True,
            )
            table.append((size, await measure(app, db, org.id, key.api_key, size, args.lookups)))
    finally:
        await lifespan.__aexit__(None, None, None)
        await db.dispose()

    print(f"\nbackend {db.backend}, {args.lookups} lookups per case; microseconds")
    print("xR: median / median at the smallest size; xF: the same after dividing each median")
    print(f"by the same moment's '{FLOOR}' median (cancels how busy the machine was)")
    names = list(table[0][1])
    print(f"{'case':<13}" + "".join(f"{'n=' + format(s, ','):>34}" for s, _ in table))

    def med(results: dict[str, list[float]], name: str) -> float:
        return statistics.median(results[name])

    first = table[0][1]
    worst_raw = worst_floor = 0.0
    for name in names:
        cells = []
        for _, results in table:
            samples = sorted(results[name])
            p95 = samples[max(0, int(len(samples) * 0.95) - 1)]
            raw = med(results, name) / med(first, name)
            floored = raw / (med(results, FLOOR) / med(first, FLOOR))
            if name != FLOOR:
                worst_raw, worst_floor = max(worst_raw, raw), max(worst_floor, floored)
            cells.append(f"{med(results, name):7.0f} p95 {p95:6.0f} xR{raw:4.2f} xF{floored:4.2f}")
        print(f"{name:<13}" + "".join(f"{c:>34}" for c in cells))
    largest, smallest = table[-1][0], table[0][0]
    print(
        f"\nworst median ratio n={largest:,} / n={smallest:,}: {worst_raw:.2f}x raw, "
        f"{worst_floor:.2f}x against the floor (bar: 2x)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--postgres-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--lookups", type=int, default=300)
    parser.add_argument("--others", type=float, default=0.1, help="other orgs' calls per size")
    asyncio.run(main(parser.parse_args()))
