"""Campaigns: CSV import, dispatch overhead, pacing accuracy and peak concurrency, on SQLite and
PostgreSQL, side by side in one run.

    .venv/bin/python bench/campaigns.py [--rows 100000] [--dispatch 1000] [--pace-seconds 30]
                                        [--backends sqlite,postgresql]

1. Import: ``--rows`` recipients as one ``text/csv`` upload (``POST /campaigns/{id}/recipients``,
   a phone number and two param columns), through the app in process; rows per second.
2. Dispatch overhead: ``--dispatch`` due recipients, served by the dialer's own transaction
   (``engine.dialer.serve_campaign``: lock, budget, due recipients through their index, calling
   hours, the do-not-call list, the call created as ``POST /calls`` creates it, claimed, its
   ``call.dialing`` event) from 1 and then 2 concurrent dialers; milliseconds per attempt. The
   pace clock is set back before each round so pacing does not limit what is measured.
3. Pacing: an embedded engine dials a campaign of ``calls_per_minute`` 60 (calls of 0.5 s,
   ``max_concurrent`` 50); dials counted over ``--pace-seconds`` from the campaign's start,
   against the rate asked.
4. Peak concurrency: ``max_concurrent`` 4, ``calls_per_minute`` 600, calls of 2 s; the most
   attempts in flight at once, from their ``call.dialing`` and ``call.ended`` events.

PostgreSQL runs in a fresh database (CALLPLANE_BENCH_POSTGRES_URL, default the test server at
postgresql://postgres@127.0.0.1:5432/postgres), dropped at the end; SQLite in a temp file.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select, update
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from callplane.app import create_app  # noqa: E402
from callplane.engine.dialer import serve_campaign  # noqa: E402
from callplane.kit.db import Database  # noqa: E402
from callplane.migrate import upgrade  # noqa: E402
from callplane.models.calls import CallEvent  # noqa: E402
from callplane.models.campaigns import Campaign  # noqa: E402
from callplane.orgs.service import create_organization, issue_key  # noqa: E402
from callplane.settings import Settings  # noqa: E402

ADMIN_URL = os.environ.get(
    "CALLPLANE_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
ALL_DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


def open_zone() -> str:
    """A fixed-offset zone where it is midday now: the windows are open whenever this runs."""
    hour = datetime.now(UTC).hour
    offset = (12 - hour + 11) % 24 - 11
    return f"Etc/GMT{-offset:+d}" if offset else "UTC"


async def _admin(statement: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(ADMIN_URL)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


class Backend:
    def __init__(self, name: str, tmp: Path) -> None:
        self.name = name
        self.tmp = tmp
        self.database = f"callplane_bench_{uuid.uuid4().hex[:10]}"
        if name == "postgresql":
            self.url = make_url(ADMIN_URL).set(database=self.database).render_as_string(False)
        else:
            self.url = f"sqlite:///{tmp / 'bench.db'}"

    async def __aenter__(self) -> Backend:
        if self.name == "postgresql":
            await _admin(f'CREATE DATABASE "{self.database}"')
        db = Database(self.url, pool_size=2)
        try:
            await upgrade(db)
        finally:
            await db.dispose()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        if self.name == "postgresql":
            await _admin(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')

    def settings(self, **overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "database_url": self.url,
            "log_level": "error",
            "signing_key": "bench-signing-key",
            "worker": "off",
            "storage_url": f"file://{self.tmp / 'recordings'}",
            "max_body_bytes": 64 * 1024 * 1024,
            "max_concurrent_calls": 100_000,
            "rate_limit": "1000000000/minute",
            # As measured before Piper's joe voice became the default (comparable numbers).
            "voice_engine": "espeak-ng:en-us",
        }
        values.update(overrides)
        return Settings(_env_file=None, **values)  # type: ignore[call-arg]


class App:
    """The app in process, started, with an organization, its key and an agent."""

    def __init__(self, settings: Settings) -> None:
        self.app = create_app(settings)
        self.runtime = self.app.state.runtime
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://bench", timeout=600
        )

    async def __aenter__(self) -> App:
        self.lifespan = self.app.router.lifespan_context(self.app)
        await self.lifespan.__aenter__()
        async with self.runtime.db.session(write=True) as session:
            org = await create_organization(session, f"bench-{uuid.uuid4().hex[:6]}")
            key = await issue_key(session, org.id)
            await session.commit()
        self.org = org.id
        self.headers = {"Authorization": f"Bearer {key.api_key}"}
        agent = await self.client.post("/v1/agents", json={"name": "Bench"}, headers=self.headers)
        self.agent = agent.json()["agent"]["id"]
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.client.aclose()
        await self.lifespan.__aexit__(None, None, None)

    async def campaign(self, rows: int, **settings: Any) -> str:
        schedule = {
            "timezone": open_zone(),
            "windows": [{"days": ALL_DAYS, "start": "08:00", "end": "21:00"}],
        }
        made = await self.client.post(
            "/v1/campaigns",
            json={"name": "Bench", "agent_id": self.agent, "schedule": schedule, **settings},
            headers=self.headers,
        )
        campaign_id: str = made.json()["campaign"]["id"]
        if rows:
            await self.upload(campaign_id, rows)
        return campaign_id

    async def upload(self, campaign_id: str, rows: int, start: int = 1000) -> float:
        text = "phone_number,first_name,order_id\n" + "".join(
            f"+1555{start + n:07d},Name{n},A-{n}\n" for n in range(rows)
        )
        began = time.perf_counter()
        response = await self.client.post(
            f"/v1/campaigns/{campaign_id}/recipients",
            content=text.encode(),
            headers={**self.headers, "Content-Type": "text/csv"},
        )
        took = time.perf_counter() - began
        assert response.status_code == 201 and response.json()["added"] == rows, response.text
        return took

    async def start(self, campaign_id: str) -> None:
        response = await self.client.post(
            f"/v1/campaigns/{campaign_id}/start", headers=self.headers
        )
        assert response.status_code == 200, response.text

    async def counts(self, campaign_id: str) -> dict[str, Any]:
        got = await self.client.get(f"/v1/campaigns/{campaign_id}", headers=self.headers)
        return dict(got.json()["campaign"]["counts"]) | {"status": got.json()["campaign"]["status"]}


async def bench_import(backend: Backend, rows: int) -> float:
    async with App(backend.settings()) as app:
        campaign_id = await app.campaign(0)
        took = await app.upload(campaign_id, rows)
    return rows / took


async def bench_dispatch(backend: Backend, attempts: int, dialers: int) -> float:
    async with App(backend.settings()) as app:
        campaign_id = uuid.UUID(
            await app.campaign(attempts, pacing={"max_concurrent": 1000, "calls_per_minute": 6000})
        )
        await app.start(str(campaign_id))
        db = app.runtime.db
        spent = 0.0
        made = 0

        async def dialer(worker: str) -> None:
            nonlocal spent, made
            while True:
                async with db.session(write=True) as session:  # not timed: pacing set aside
                    await session.execute(
                        update(Campaign)
                        .where(Campaign.organization_id == app.org, Campaign.id == campaign_id)
                        .values(pace_at=datetime.now(UTC) - timedelta(hours=1))
                    )
                    await session.commit()
                began = time.perf_counter()
                async with db.session(write=True) as session:
                    served = await serve_campaign(
                        session, app.runtime, app.org, campaign_id, worker, 100
                    )
                    await session.commit()
                spent += time.perf_counter() - began
                made += len(served.calls)
                if not served.calls:
                    return

        await asyncio.gather(*(dialer(f"bench-{n}") for n in range(dialers)))
        assert made == attempts, (made, attempts)
    return spent * 1000 / made


async def _events(app: App) -> dict[Any, dict[str, datetime]]:
    async with app.runtime.db.session(write=False) as session:
        rows = (
            await session.execute(
                select(CallEvent.call_uuid, CallEvent.type, CallEvent.at).where(
                    CallEvent.organization_id == app.org
                )
            )
        ).all()
    by_call: dict[Any, dict[str, datetime]] = defaultdict(dict)
    for call, type_, at in rows:
        by_call[call][type_] = at
    return by_call


async def bench_pacing(backend: Backend, seconds: float) -> tuple[float, int]:
    settings = backend.settings(
        worker="embedded", simulated_call_seconds=0.5, worker_poll_seconds=0.05
    )
    async with App(settings) as app:
        rows = int(seconds) + 20
        campaign_id = await app.campaign(
            rows, pacing={"max_concurrent": 50, "calls_per_minute": 60}
        )
        await app.start(campaign_id)
        await asyncio.sleep(seconds + 3)
        await app.client.post(f"/v1/campaigns/{campaign_id}/pause", headers=app.headers)
        got = await app.client.get(f"/v1/campaigns/{campaign_id}", headers=app.headers)
        started = datetime.fromisoformat(got.json()["campaign"]["started_at"])
        dials = sorted(m["call.dialing"] for m in (await _events(app)).values())
    within = [d for d in dials if (d - started).total_seconds() < seconds]
    return len(within) * 60 / seconds, len(dials)


async def bench_peak(backend: Backend, limit: int) -> tuple[int, int]:
    settings = backend.settings(
        worker="embedded", simulated_call_seconds=2, worker_poll_seconds=0.05
    )
    async with App(settings) as app:
        campaign_id = await app.campaign(
            40, pacing={"max_concurrent": limit, "calls_per_minute": 600}
        )
        await app.start(campaign_id)
        deadline = time.monotonic() + 120
        while (await app.counts(campaign_id))["status"] != "completed":
            assert time.monotonic() < deadline
            await asyncio.sleep(0.5)
        spans = [(m["call.dialing"], m["call.ended"]) for m in (await _events(app)).values()]
    moments = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    peak = now = 0
    for _, step in moments:
        now += step
        peak = max(peak, now)
    return peak, len(spans)


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dispatch", type=int, default=1000)
    parser.add_argument("--pace-seconds", type=float, default=30.0)
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    print(f"uptime before: {_uptime()}")
    results: dict[str, dict[str, str]] = {}
    for name in args.backends.split(","):
        with tempfile.TemporaryDirectory(prefix="callplane-bench-") as tmp:
            async with Backend(name, Path(tmp)) as backend:
                row: dict[str, str] = {}
                rate = await bench_import(backend, args.rows)
                row["import"] = f"{rate:,.0f} rows/s ({args.rows:,} rows)"
                print(name, "import", row["import"], flush=True)
                for dialers in (1, 2):
                    ms = await bench_dispatch(backend, args.dispatch, dialers)
                    row[f"dispatch x{dialers}"] = f"{ms:.2f} ms/attempt"
                    print(name, f"dispatch x{dialers}", row[f"dispatch x{dialers}"], flush=True)
                per_minute, total = await bench_pacing(backend, args.pace_seconds)
                error = (per_minute - 60) / 60 * 100
                row["pacing"] = f"{per_minute:.1f}/min for 60 asked ({error:+.1f} %)"
                print(name, "pacing", row["pacing"], flush=True)
                peak, calls = await bench_peak(backend, 4)
                row["peak"] = f"{peak} at once for max_concurrent 4 ({calls} calls)"
                print(name, "peak", row["peak"], flush=True)
                results[name] = row
    print(f"uptime after: {_uptime()}")
    names = list(results)
    print("\n| measure | " + " | ".join(names) + " | goal |")
    print("|---|" + "---|" * len(names) + "---|")
    goals = {
        "import": "≥ 20,000 rows/s",
        "dispatch x1": "≤ 5 ms",
        "dispatch x2": "≤ 5 ms",
        "pacing": "± 5 %",
        "peak": "≤ max_concurrent",
    }
    for measure, goal in goals.items():
        cells = " | ".join(results[n][measure] for n in names)
        print(f"| {measure} | {cells} | {goal} |")


if __name__ == "__main__":
    asyncio.run(main())
