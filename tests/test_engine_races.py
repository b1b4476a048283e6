"""A claim and POST /calls/{uuid}/cancel racing for the same call: one of them wins, never
both and never neither (docs/api-contract.md, docs/engine-core.md)."""

from __future__ import annotations

import asyncio
import random
import uuid

from callplane.engine.claim import claim_for_organization
from tests.conftest import client_for
from tests.engine_support import create_call, events_of
from tests.factories import make_org, runtime_of

ROUNDS = 50


async def test_cancel_racing_the_claim(make_app):
    app = await make_app()  # the API; the claims below are the engine's own statement
    runtime = runtime_of(app)
    org = await make_org(app)
    rng = random.Random(1234)

    async def claim() -> list[uuid.UUID]:
        await asyncio.sleep(rng.uniform(0, 0.003))
        async with runtime.db.session(write=True) as session:
            calls = await claim_for_organization(session, runtime, org.id, "race-worker", 5)
            await session.commit()
            return [c.id for c in calls]

    outcomes = {"cancelled": 0, "dispatched": 0}
    async with client_for(app) as client:

        async def cancel(call_id: str) -> int:
            await asyncio.sleep(rng.uniform(0, 0.003))
            response = await client.post(f"/v1/calls/{call_id}/cancel", headers=org.headers)
            return response.status_code

        for _ in range(ROUNDS):
            call_id = await create_call(client, org, "+14155550100")
            claimed, status_code = await asyncio.gather(claim(), cancel(call_id))
            call = (await client.get(f"/v1/calls/{call_id}", headers=org.headers)).json()["call"]
            types = [e["type"] for e in await events_of(client, org, call_id)]
            if status_code == 200:
                assert claimed == [] and call["status"] == "cancelled"
                assert types == ["call.cancelled"]
                outcomes["cancelled"] += 1
            else:
                assert status_code == 409
                assert [str(c) for c in claimed] == [call_id] and call["status"] == "dialing"
                assert types == ["call.dialing"]
                outcomes["dispatched"] += 1
    assert sum(outcomes.values()) == ROUNDS
    # The random head starts make both sides win some rounds: the race was really run.
    assert outcomes["cancelled"] > 0 and outcomes["dispatched"] > 0, outcomes
