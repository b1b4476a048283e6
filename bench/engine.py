"""The call engine on PostgreSQL: dispatch throughput, claim latency, webhook deliveries per second.

    .venv/bin/python bench/engine.py [--calls 3000] [--workers 2] [--samples 200] [--events 3000]

Each run uses a fresh PostgreSQL database (CALLPLANE_BENCH_POSTGRES_URL, default the test
server at postgresql://postgres@127.0.0.1:5432/postgres), migrated, dropped at the end.

1. Dispatch throughput: ``--calls`` enqueued calls over 20 organizations (limit 1000
   each), then ``--workers`` ``callplane worker`` processes with simulated calls of 0 seconds;
   calls per second from the workers' start until every call is ``completed`` (each call:
   claim, dial, answer, conversation, completion, three events, the after-call work).
2. Claim latency with an idle engine: calls created one at a time as ``POST /calls`` creates
   them (insert + NOTIFY in one transaction), 250 ms apart (each finds the engine idle);
   latency = the ``call.dialing`` event's time minus ``created_at``; p50 / p99.
3. Webhook deliveries: ``--events`` events written to one endpoint whose receiver (a separate
   process on 127.0.0.1) answers 204; deliveries per second until every attempt is logged.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from sqlalchemy import func, insert, select
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from callplane.calls.schemas import CallCreate  # noqa: E402
from callplane.calls.service import create_call  # noqa: E402
from callplane.kit import wakeups  # noqa: E402
from callplane.kit.db import Database  # noqa: E402
from callplane.migrate import upgrade  # noqa: E402
from callplane.models.base import utcnow  # noqa: E402
from callplane.models.calls import Call, CallEvent  # noqa: E402
from callplane.models.webhooks import (  # noqa: E402
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
    WebhookJob,
)
from callplane.orgs.service import create_organization  # noqa: E402
from callplane.webhooks.events import event_body  # noqa: E402

ADMIN_URL = os.environ.get(
    "CALLPLANE_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
CALLPLANE = str(Path(sys.executable).with_name("callplane"))

RECEIVER = """
import asyncio, sys
async def serve(reader, writer):
    try:
        while True:
            line = await reader.readline()
            if not line:
                return
            length = 0
            while (raw := await reader.readline()) not in (b"\\r\\n", b""):
                if raw.lower().startswith(b"content-length:"):
                    length = int(raw.split(b":")[1])
            await reader.readexactly(length)
            writer.write(b"HTTP/1.1 204 No Content\\r\\ncontent-length: 0\\r\\n\\r\\n")
    except Exception:
        pass
    finally:
        writer.close()
async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()
asyncio.run(main())
"""


async def _admin(statement: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(ADMIN_URL)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


def _workers(
    url: str, count: int, storage: Path, **settings: object
) -> list[subprocess.Popen[bytes]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CALLPLANE_")}
    env.update(
        CALLPLANE_DATABASE_URL=url,
        CALLPLANE_STORAGE_URL=f"file://{storage}",
        CALLPLANE_SIGNING_KEY="bench",
        CALLPLANE_LOG_LEVEL="warning",
        CALLPLANE_WEBHOOK_ALLOW_PRIVATE_NETWORKS="true",
    )
    env.update({f"CALLPLANE_{k.upper()}": str(v) for k, v in settings.items()})
    procs = []
    for _ in range(count):
        proc = subprocess.Popen(
            [CALLPLANE, "worker"], env=env, cwd=storage.parent, stderr=subprocess.PIPE
        )
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert b"running" in line, line
        procs.append(proc)
    return procs


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        proc.wait(30)


async def _count(db: Database, query: object) -> int:
    async with db.session(write=False) as session:
        return int(await session.scalar(query) or 0)  # type: ignore[call-overload]


async def dispatch_throughput(db: Database, url: str, args: argparse.Namespace, tmp: Path) -> None:
    async with db.session(write=True) as session:
        orgs = [(await create_organization(session, f"bench {n}")).id for n in range(20)]
        now = utcnow()
        rows = [
            {
                "organization_id": orgs[n % len(orgs)],
                "id": uuid.uuid4(),
                "simple_uuid": uuid.uuid4(),
                "to_number": f"+1415555{100 + n % 800:04d}",
                "status": "enqueued",
                "direction": "outbound",
                "transcripts": [],
                "params": {},
                "external_identifiers": {},
                "analyzers": [],
                "analysis_results": [],
                "keyterms": [],
                "transferred": False,
                "event_sequence": 0,
                "created_at": now,
                "updated_at": now,
            }
            for n in range(args.calls)
        ]
        await session.execute(insert(Call), rows)
        await session.commit()
    started = time.monotonic()
    procs = _workers(
        url,
        args.workers,
        tmp / "recordings",
        simulated_call_seconds=0,
        max_concurrent_calls=1000,
        worker_concurrency=500,
        worker_poll_seconds=0.05,
    )
    ready = time.monotonic()
    done_query = select(func.count()).select_from(Call).where(Call.status == "completed")
    while (done := await _count(db, done_query)) < args.calls:  # noqa: ASYNC110 - polling the db
        await asyncio.sleep(0.1)
    elapsed = time.monotonic() - ready
    _stop(procs)
    print(
        f"dispatch: {args.calls} calls, {args.workers} workers: {elapsed:.2f} s after the workers "
        f"were up ({time.monotonic() - started:.2f} s with start-up) -> "
        f"{args.calls / elapsed:.0f} calls/s claimed and completed ({done} completed)"
    )


async def claim_latency(db: Database, url: str, args: argparse.Namespace, tmp: Path) -> None:
    procs = _workers(url, args.workers, tmp / "recordings", simulated_call_seconds=0)
    await asyncio.sleep(1.0)  # idle
    async with db.session(write=True) as session:
        org = (await create_organization(session, "latency")).id
        await session.commit()
    ids = []
    for _ in range(args.samples):
        async with db.session(write=True) as session:
            call = await create_call(session, org, CallCreate(to_number="+14155550100"))
            await wakeups.announce(session, wakeups.CALLS)
            await session.commit()
            ids.append(call.id)
        await asyncio.sleep(0.25)
    await asyncio.sleep(2.0)
    _stop(procs)
    async with db.session(write=False) as session:
        rows = (
            await session.execute(
                select(Call.created_at, CallEvent.at)
                .join(
                    CallEvent,
                    (CallEvent.organization_id == Call.organization_id)
                    & (CallEvent.call_uuid == Call.id),
                )
                .where(Call.organization_id == org, CallEvent.type == "call.dialing")
            )
        ).all()
    latencies = sorted((at - created).total_seconds() * 1000 for created, at in rows)
    p50 = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(
        f"claim latency (idle engine, {len(latencies)} calls): p50 {p50:.1f} ms, "
        f"p99 {p99:.1f} ms, max {latencies[-1]:.1f} ms"
    )


async def webhook_rate(db: Database, url: str, args: argparse.Namespace, tmp: Path) -> None:
    receiver = subprocess.Popen(  # noqa: ASYNC220 - set-up, before anything is measured
        [sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE
    )
    assert receiver.stdout is not None
    port = int(receiver.stdout.readline())
    async with db.session(write=True) as session:
        org = (await create_organization(session, "hooks")).id
        endpoint_id = uuid.uuid4()
        session.add(
            WebhookEndpoint(
                organization_id=org,
                id=endpoint_id,
                url=f"http://127.0.0.1:{port}/",
                events=None,
                enabled=True,
                secret="whsec_" + "A" * 43 + "=",
            )
        )
        await session.commit()
    # The outbox rows as ``emit`` writes them (an event, a job for the endpoint), in bulk: the
    # set-up is not what is measured.
    now = utcnow()
    events = [
        {
            "organization_id": org,
            "id": uuid.uuid4(),
            "type": "webhook.test",
            "body": event_body("webhook.test", now, {"n": n}),
            "created_at": now,
        }
        for n in range(args.events)
    ]
    jobs = [
        {
            "organization_id": org,
            "id": uuid.uuid4(),
            "endpoint_id": endpoint_id,
            "event_id": event["id"],
            "attempt": 1,
            "due_at": now,
            "retries": True,
            "ordering_key": None,
            "position": 0,
        }
        for event in events
    ]
    async with db.session(write=True) as session:
        await session.execute(insert(WebhookEvent), events)
        await session.execute(insert(WebhookJob), jobs)
        await session.commit()
    procs = _workers(url, args.workers, tmp / "recordings")
    ready = time.monotonic()
    logged = (
        select(func.count())
        .select_from(WebhookDelivery)
        .where(WebhookDelivery.organization_id == org, WebhookDelivery.delivered.is_(True))
    )
    while await _count(db, logged) < args.events:  # noqa: ASYNC110 - polling the db
        await asyncio.sleep(0.1)
    elapsed = time.monotonic() - ready
    _stop(procs)
    receiver.terminate()
    print(
        f"webhooks: {args.events} deliveries, {args.workers} workers, one local receiver: "
        f"{elapsed:.2f} s -> {args.events / elapsed:.0f} deliveries/s"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--events", type=int, default=3000)
    parser.add_argument("--only", choices=["dispatch", "latency", "webhooks"])
    args = parser.parse_args()
    import tempfile

    for name, run in [
        ("dispatch", dispatch_throughput),
        ("latency", claim_latency),
        ("webhooks", webhook_rate),
    ]:
        if args.only and args.only != name:
            continue
        database = f"callplane_bench_{uuid.uuid4().hex[:10]}"
        await _admin(f'CREATE DATABASE "{database}"')
        url = make_url(ADMIN_URL).set(database=database).render_as_string(False)
        db = Database(url, pool_size=2)
        try:
            await upgrade(db)
            with tempfile.TemporaryDirectory(prefix="callplane-bench-") as tmp:
                await run(db, url, args, Path(tmp))
        finally:
            await db.dispose()
            await _admin(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


if __name__ == "__main__":
    asyncio.run(main())
