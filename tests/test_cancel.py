"""POST /v1/calls/{uuid}/cancel (SPEC; docs/api-contract.md#call-statuses-and-cancel), errors in the
STATUS shape."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import select, update

from callplane.models.calls import Call
from tests.factories import load, make_org, runtime_of
from tests.test_calls_helpers import assert_status_error

CALL = "c0000000-0000-4000-8000-000000000001"


async def _status(app, call_id: str) -> str:
    async with runtime_of(app).db.session(write=False) as session:
        status: str = await session.scalar(select(Call.status).where(Call.id == uuid.UUID(call_id)))
        return status


async def test_enqueued_call_is_cancelled(app, client):
    org = await make_org(app)
    await load(app, org, {"calls": [{"id": CALL}]})
    response = await client.post(f"/v1/calls/{CALL}/cancel", headers=org.headers)
    assert response.status_code == 200
    assert response.json() == {"success": True, "status": "cancelled", "uuid": CALL}
    assert await _status(app, CALL) == "cancelled"
    fetched = await client.get(f"/v1/calls/{CALL}", headers=org.headers)
    assert fetched.json()["call"]["status"] == "cancelled"


async def test_cancelling_again_succeeds(app, client):
    org = await make_org(app)
    await load(app, org, {"calls": [{"id": CALL}]})
    first = await client.post(f"/v1/calls/{CALL}/cancel", headers=org.headers)
    again = await client.post(f"/v1/calls/{CALL}/cancel", headers=org.headers)
    assert first.json() == again.json() == {"success": True, "status": "cancelled", "uuid": CALL}


async def test_a_call_loaded_as_cancelled_can_be_cancelled(app, client):
    org = await make_org(app)
    await load(app, org, {"calls": [{"id": CALL, "status": "cancelled"}]})
    response = await client.post(f"/v1/calls/{CALL}/cancel", headers=org.headers)
    assert response.status_code == 200


@pytest.mark.parametrize(
    "status", ["dialing", "in_progress", "completed", "failed", "no_answer", "busy"]
)
async def test_started_or_finished_call_is_409_and_unchanged(app, client, status):
    org = await make_org(app)
    await load(app, org, {"calls": [{"id": CALL, "status": status}]})
    response = await client.post(f"/v1/calls/{CALL}/cancel", headers=org.headers)
    body = assert_status_error(response, 409)
    assert status in body["error"]
    assert await _status(app, CALL) == status


async def test_unknown_call_is_404(app, client):
    org = await make_org(app)
    response = await client.post(f"/v1/calls/{uuid.uuid4()}/cancel", headers=org.headers)
    assert_status_error(response, 404)


async def test_another_organizations_call_is_404_and_not_cancelled(app, client):
    mine = await make_org(app, "mine")
    theirs = await make_org(app, "theirs")
    await load(app, theirs, {"calls": [{"id": CALL}]})
    response = await client.post(f"/v1/calls/{CALL}/cancel", headers=mine.headers)
    body = assert_status_error(response, 404)
    missing = await client.post(f"/v1/calls/{uuid.uuid4()}/cancel", headers=mine.headers)
    assert missing.json() == body  # indistinguishable from a missing call
    assert await _status(app, CALL) == "enqueued"


@pytest.mark.parametrize(
    "bad", ["not-a-uuid", "1' OR '1'='1", "c0000000-0000-4000-8000-00000000000"]
)
async def test_malformed_uuid_is_422(app, client, bad):
    org = await make_org(app)
    response = await client.post(f"/v1/calls/{bad}/cancel", headers=org.headers)
    assert_status_error(response, 422)


async def test_unauthenticated_is_401(app, client):
    response = await client.post(f"/v1/calls/{CALL}/cancel")
    assert_status_error(response, 401)


async def test_cancel_races_a_dispatcher_and_exactly_one_wins(app, client):
    """Cancel (HTTP) against a dispatcher's conditional take on its own connection.

    Whatever the interleaving, the call ends cancelled with a successful cancel and a failed
    take, or dialing with a taken call and a 409 — never a success for both.
    """
    org = await make_org(app)
    ids = [str(uuid.uuid4()) for _ in range(40)]
    await load(app, org, {"calls": [{"id": i} for i in ids]})
    engine = runtime_of(app).db.write_engine

    async def dispatch(call_id: str) -> bool:
        async with engine.begin() as conn:
            taken = await conn.execute(
                update(Call)
                .where(Call.id == uuid.UUID(call_id), Call.status == "enqueued")
                .values(status="dialing")
                .returning(Call.id)
            )
            return taken.first() is not None

    outcomes = {"cancelled": 0, "dialing": 0}
    for call_id in ids:
        cancel, taken = await asyncio.gather(
            client.post(f"/v1/calls/{call_id}/cancel", headers=org.headers), dispatch(call_id)
        )
        final = await _status(app, call_id)
        if cancel.status_code == 200:
            assert not taken and final == "cancelled"
        else:
            assert cancel.status_code == 409, cancel.text
            assert taken and final == "dialing"
        outcomes[final] += 1
    assert sum(outcomes.values()) == len(ids)
