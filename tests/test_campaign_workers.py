"""The dialer across worker processes: a worker killed outright never causes an attempt to be
dialled twice, and two workers share one campaign's pace and concurrency (the budget lives in
the database, not in a process)."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from datetime import datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from callplane.models.calls import Call, CallEvent
from tests.campaigns_support import create_campaign, open_schedule, org_with_agent
from tests.conftest import BACKEND, AppFactory, client_for
from tests.engine_support import engine_app, events_of
from tests.factories import OrgHandle, runtime_of
from tests.tenancy_check import checked
from tests.worker_process import WorkerProcess


async def _campaign(
    client: httpx.AsyncClient, org: OrgHandle, numbers: list[str], **fields: Any
) -> str:
    campaign = await create_campaign(client, org, schedule=open_schedule(), **fields)
    cid: str = campaign["id"]
    response = await client.post(
        f"/v1/campaigns/{cid}/recipients",
        json={"recipients": [{"phone_number": n} for n in numbers]},
        headers=org.headers,
    )
    assert response.json()["added"] == len(numbers), response.text
    assert (await client.post(f"/v1/campaigns/{cid}/start", headers=org.headers)).status_code == 200
    return cid


async def _campaign_until(
    client: httpx.AsyncClient, org: OrgHandle, cid: str, done: Any, within: float = 60
) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        got = (await client.get(f"/v1/campaigns/{cid}", headers=org.headers)).json()["campaign"]
        if done(got):
            return dict(got)
        assert time.monotonic() < deadline, got
        await asyncio.sleep(0.1)


async def test_a_killed_worker_never_gets_an_attempt_dialled_twice(
    make_app: AppFactory, database_url: str, tmp_path: Any
) -> None:
    app = await make_app()  # the API only
    org = await org_with_agent(app)
    numbers = [f"+1555000{n}" for n in range(1300, 1303)]
    worker = await WorkerProcess.start(
        database_url,
        tmp_path,
        simulated_call_seconds=60,
        worker_lease_seconds=1.5,
        worker_poll_seconds=0.05,
    )
    try:
        async with client_for(app) as client:
            cid = await _campaign(
                client,
                org,
                numbers,
                retry={"max_attempts": 1},
                pacing={"max_concurrent": 3, "calls_per_minute": 6000},
            )
            await _campaign_until(client, org, cid, lambda c: c["counts"]["calling"] == 3)
            await worker.kill()
            survivor = await engine_app(make_app, worker_lease_seconds=1.5)
            done = await _campaign_until(client, org, cid, lambda c: c["status"] == "completed")
            people = (
                await client.get(f"/v1/campaigns/{cid}/recipients", headers=org.headers)
            ).json()["recipients"]
            events = {
                p["phone_number"]: await events_of(client, org, p["call_ids"][0]) for p in people
            }
    finally:
        await worker.cleanup()
    assert done["counts"]["exhausted"] == 3 and done["counts"]["attempts"] == 3
    for person in people:
        assert (person["attempts"], len(person["call_ids"])) == (1, 1)
        assert person["last_outcome"] == "failed"
        dialing = [e for e in events[person["phone_number"]] if e["type"] == "call.dialing"]
        assert len(dialing) == 1
    assert survivor.state.engine.adapter.dialled == []  # nobody dialled them again


async def _dials_and_ends(
    app: Any, org: OrgHandle
) -> tuple[list[datetime], list[tuple[datetime, datetime]], set[str]]:
    with checked():
        async with runtime_of(app).db.session(write=False) as session:
            rows = (
                await session.execute(
                    select(CallEvent.call_uuid, CallEvent.type, CallEvent.at).where(
                        CallEvent.organization_id == org.id
                    )
                )
            ).all()
            workers = set(
                await session.scalars(select(Call.worker_id).where(Call.organization_id == org.id))
            )
    by_call: dict[Any, dict[str, datetime]] = defaultdict(dict)
    for call, type_, at in rows:
        by_call[call][type_] = at
    dials = sorted(m["call.dialing"] for m in by_call.values())
    spans = [(m["call.dialing"], m["call.ended"]) for m in by_call.values()]
    return dials, spans, {w for w in workers if w}


@pytest.mark.skipif(BACKEND != "postgresql", reason="several worker processes need PostgreSQL")
async def test_two_workers_share_the_pace_and_the_concurrency(
    make_app: AppFactory, database_url: str, tmp_path: Any
) -> None:
    app = await make_app()
    org = await org_with_agent(app)
    numbers = [f"+1555000{n}" for n in range(1400, 1430)]
    settings = {"simulated_call_seconds": 0.3, "worker_poll_seconds": 0.05}
    workers = [await WorkerProcess.start(database_url, tmp_path, **settings) for _ in range(2)]
    try:
        async with client_for(app) as client:
            cid = await _campaign(
                client, org, numbers, pacing={"max_concurrent": 3, "calls_per_minute": 600}
            )
            await _campaign_until(client, org, cid, lambda c: c["status"] == "completed", 120)
        dials, spans, holders = await _dials_and_ends(app, org)
    finally:
        for w in workers:
            await w.terminate()
    assert len(dials) == len(numbers)
    # Never more than max_concurrent calls at once, whichever worker held them.
    moments = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    peak = now = 0
    for _, step in moments:
        now += step
        peak = max(peak, now)
    assert peak <= 3
    # The pace is one clock: 600 a minute is one dial every 0.1 s, at most 10 in any second.
    for i, first in enumerate(dials):
        within = [d for d in dials[i:] if (d - first).total_seconds() < 1.0]
        assert len(within) <= 11, within
    assert len(holders) >= 1
