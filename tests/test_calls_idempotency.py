"""Idempotency-Key on POST /v1/calls (docs/api-contract.md#extension-routes): same key and body →
the first response; same key, other body → 409; keys per organization, kept 24 hours; concurrent
first requests create one call."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import update

from callplane.models.calls import CallIdempotencyKey
from tests.conftest import client_for
from tests.factories import load, make_org, runtime_of
from tests.test_calls_helpers import BASICS, TAG_VIP, assert_status_error, count_calls

# --- Idempotency-Key -----------------------------------------------------------------------


async def test_same_idempotency_key_and_body_returns_the_first_response(app, client):
    org = await make_org(app)
    headers = {**org.headers, "Idempotency-Key": "order-42"}
    body = {"to_number": "+14155550123", "params": {"order": "42"}}
    first = await client.post("/v1/calls", headers=headers, json=body)
    second = await client.post("/v1/calls", headers=headers, json=body)
    assert first.status_code == second.status_code == 201
    assert second.json() == first.json()
    assert await count_calls(app, org.id) == 1


async def test_same_idempotency_key_with_another_body_is_409(app, client):
    org = await make_org(app)
    headers = {**org.headers, "Idempotency-Key": "order-42"}
    await client.post("/v1/calls", headers=headers, json={"to_number": "+14155550123"})
    other = await client.post("/v1/calls", headers=headers, json={"to_number": "+14155550124"})
    assert_status_error(other, 409)
    assert await count_calls(app, org.id) == 1


async def test_idempotency_keys_are_per_organization(app, client):
    mine = await make_org(app, "mine")
    theirs = await make_org(app, "theirs")
    body = {"to_number": "+14155550123"}
    a = await client.post("/v1/calls", headers={**mine.headers, "Idempotency-Key": "k"}, json=body)
    b = await client.post(
        "/v1/calls", headers={**theirs.headers, "Idempotency-Key": "k"}, json=body
    )
    assert a.status_code == b.status_code == 201
    assert a.json()["call_id"] != b.json()["call_id"]


async def test_failed_request_does_not_consume_its_key(app, client):
    org = await make_org(app)
    headers = {**org.headers, "Idempotency-Key": "retry-me"}
    missing_tag = {"to_number": "+14155550123", "tags": [TAG_VIP]}
    assert_status_error(await client.post("/v1/calls", headers=headers, json=missing_tag), 422)
    await load(app, org, {"call_tags": BASICS["call_tags"]})
    retried = await client.post("/v1/calls", headers=headers, json=missing_tag)
    assert retried.status_code == 201


async def test_idempotency_key_older_than_24_hours_may_be_reused(app, client):
    org = await make_org(app)
    headers = {**org.headers, "Idempotency-Key": "old"}
    first = await client.post("/v1/calls", headers=headers, json={"to_number": "+14155550123"})
    async with runtime_of(app).db.session(write=True) as session:
        # 23 hours: still honoured.
        await session.execute(
            update(CallIdempotencyKey).values(created_at=datetime.now(UTC) - timedelta(hours=23))
        )
        await session.commit()
    kept = await client.post("/v1/calls", headers=headers, json={"to_number": "+14155550124"})
    assert_status_error(kept, 409)
    async with runtime_of(app).db.session(write=True) as session:
        await session.execute(
            update(CallIdempotencyKey).values(created_at=datetime.now(UTC) - timedelta(hours=25))
        )
        await session.commit()
    reused = await client.post("/v1/calls", headers=headers, json={"to_number": "+14155550124"})
    assert reused.status_code == 201
    assert reused.json()["call_id"] != first.json()["call_id"]


async def test_concurrent_first_requests_with_one_key_create_one_call(make_app):
    apps = [await make_app(), await make_app()]
    org = await make_org(apps[0])
    body = {"to_number": "+14155550123"}

    async def post(i: int):
        async with client_for(apps[i % 2]) as c:
            return await c.post(
                "/v1/calls", headers={**org.headers, "Idempotency-Key": "race"}, json=body
            )

    responses = await asyncio.gather(*(post(i) for i in range(8)))
    statuses = sorted(r.status_code for r in responses)
    assert all(s in (201, 409) for s in statuses), statuses
    ids = {r.json()["call_id"] for r in responses if r.status_code == 201}
    assert len(ids) == 1
    assert await count_calls(apps[0], org.id) == 1


@pytest.mark.parametrize("key", ["", "x" * 256, "bad key", "ключ"])
async def test_invalid_idempotency_keys_are_422(app, client, key):
    org = await make_org(app)
    response = await client.post(
        "/v1/calls",
        headers=[
            (b"Authorization", org.headers["Authorization"].encode()),
            (b"Idempotency-Key", key.encode("utf-8")),
        ],
        json={"to_number": "+14155550123"},
    )
    assert_status_error(response, 422)
