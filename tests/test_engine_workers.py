"""The engine across processes: workers share the queue, a dead worker's call fails once its
lease runs out (never redialled), SIGTERM lets calls finish (docs/engine-core.md)."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict

import pytest
from sqlalchemy import select

from callplane.models.calls import CallEvent
from tests.conftest import BACKEND, client_for
from tests.engine_support import create_call, engine_app, events_of, lifecycle, wait_for_call
from tests.factories import load, make_org, runtime_of
from tests.worker_process import WorkerProcess


async def _completed(client, org) -> int:
    response = await client.get("/v1/calls?status=completed&page_size=1", headers=org.headers)
    total: int = response.json()["total_count"]
    return total


@pytest.mark.skipif(BACKEND != "postgresql", reason="several worker processes need PostgreSQL")
async def test_two_workers_dial_every_call_once_within_each_organizations_limit(
    make_app, database_url, tmp_path
):
    app = await make_app()  # the API only: the workers do the work
    orgs = [await make_org(app, f"org {n}") for n in range(4)]
    for org in orgs:
        await load(
            app,
            org,
            {
                "calls": [
                    {"to_number": f"+1415555{n:04d}", "status": "enqueued"} for n in range(100, 150)
                ]
            },
        )
    settings = {
        "max_concurrent_calls": 4,
        "simulated_call_seconds": 0.05,
        "worker_poll_seconds": 0.05,
    }
    workers = [await WorkerProcess.start(database_url, tmp_path, **settings) for _ in range(2)]
    try:
        async with client_for(app) as client:
            deadline = time.monotonic() + 90
            for org in orgs:
                while await _completed(client, org) < 50:
                    assert time.monotonic() < deadline, await _completed(client, org)
                    await asyncio.sleep(0.2)
        # Every event of the 200 calls, read in one query (200 GETs would cost more than the run).
        async with runtime_of(app).db.session(write=False) as session:
            rows = (
                await session.execute(
                    select(
                        CallEvent.organization_id,
                        CallEvent.call_uuid,
                        CallEvent.type,
                        CallEvent.sequence,
                        CallEvent.at,
                    ).order_by(CallEvent.call_uuid, CallEvent.sequence)
                )
            ).all()
        per_call: dict[object, list[tuple[str, int]]] = defaultdict(list)
        timelines: dict[int, list[tuple[object, int]]] = defaultdict(list)
        for org_id, call_uuid, type_, sequence, at in rows:
            if type_ == "call.analyzed":  # the conversation's, after the call
                continue
            per_call[call_uuid].append((type_, sequence))
            if type_ == "call.dialing":
                timelines[org_id].append((at, 1))
            elif type_ == "call.ended":
                timelines[org_id].append((at, -1))
        assert len(per_call) == 200
        expected = [("call.dialing", 1), ("call.in_progress", 2), ("call.ended", 3)]
        assert all(events == expected for events in per_call.values())  # each dialled once
        for timeline in timelines.values():
            active = peak = 0
            for _, delta in sorted(timeline, key=lambda item: (item[0], item[1])):
                active += delta
                peak = max(peak, active)
            assert 1 <= peak <= 4
        async with client_for(app) as client:  # and the API agrees
            [sample] = (await client.get("/v1/calls?page_size=1", headers=orgs[0].headers)).json()[
                "calls"
            ]
            sampled = lifecycle(await events_of(client, orgs[0], sample["id"]))
            assert [e["type"] for e in sampled] == [t for t, _ in expected]
    finally:
        codes = [await w.terminate() for w in workers]
        for w in workers:
            await w.cleanup()
    assert codes == [0, 0]


async def test_a_killed_workers_call_fails_after_its_lease_and_is_not_redialled(
    make_app, database_url, tmp_path
):
    app = await make_app()
    org = await make_org(app)
    worker = await WorkerProcess.start(
        database_url,
        tmp_path,
        simulated_call_seconds=60,
        worker_lease_seconds=1.5,
        worker_poll_seconds=0.05,
    )
    try:
        async with client_for(app) as client:
            call_id = await create_call(client, org, "+14155550100", first_message="Hi")
            await wait_for_call(client, org, call_id, {"in_progress"}, within=30)
            await worker.kill()
            killed_at = time.monotonic()
            # Another worker (here: an engine in this process) notices the expired lease.
            survivor = await engine_app(make_app, worker_lease_seconds=1.5)
            call = await wait_for_call(client, org, call_id, within=20)
            assert time.monotonic() - killed_at >= 0.5  # only once the lease has run out
            await asyncio.sleep(0.5)
            events = await events_of(client, org, call_id)
            final = (await client.get(f"/v1/calls/{call_id}", headers=org.headers)).json()
    finally:
        await worker.cleanup()
    assert call["status"] == "failed"
    assert [e["type"] for e in events] == ["call.dialing", "call.in_progress", "call.ended"]
    assert events[2]["data"]["status"] == "failed"
    assert events[2]["data"]["reason"] == "the worker holding the call stopped"
    assert final["call"]["status"] == "failed" and final["call"]["ended_at"] is not None
    assert survivor.state.engine.adapter.dialled == []  # nobody dialled it again


async def test_sigterm_lets_calls_in_progress_finish(make_app, database_url, tmp_path):
    app = await make_app()
    org = await make_org(app)
    worker = await WorkerProcess.start(
        database_url,
        tmp_path,
        simulated_call_seconds=1.0,
        worker_grace_seconds=20,
        worker_poll_seconds=0.05,
    )
    try:
        async with client_for(app) as client:
            call_id = await create_call(client, org, "+14155550100")
            await wait_for_call(client, org, call_id, {"in_progress"}, within=30)
            code = await worker.terminate()
            call = (await client.get(f"/v1/calls/{call_id}", headers=org.headers)).json()["call"]
            events = await events_of(client, org, call_id)
    finally:
        await worker.cleanup()
    assert code == 0
    assert call["status"] == "completed"
    assert events[2]["type"] == "call.ended"
    assert events[2]["data"]["reason"] == "the far end hung up"  # it ran its course


async def test_past_the_grace_period_calls_are_hung_up_and_completed(
    make_app, database_url, tmp_path
):
    app = await make_app()
    org = await make_org(app)
    worker = await WorkerProcess.start(
        database_url,
        tmp_path,
        simulated_call_seconds=60,
        worker_grace_seconds=0.3,
        drain_seconds=0.3,  # a SIGTERM drains (docs/sip-edge.md)
        worker_poll_seconds=0.05,
    )
    try:
        async with client_for(app) as client:
            call_id = await create_call(client, org, "+14155550100")
            await wait_for_call(client, org, call_id, {"in_progress"}, within=30)
            code = await worker.terminate(within=15)
            call = (await client.get(f"/v1/calls/{call_id}", headers=org.headers)).json()["call"]
            events = await events_of(client, org, call_id)
    finally:
        await worker.cleanup()
    assert code == 0
    assert call["status"] == "completed"
    assert events[2]["type"] == "call.ended"
    assert events[2]["data"]["reason"] == "the worker stopped"
