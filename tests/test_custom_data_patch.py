"""PATCH /v1/data/{table}/{id}?sourceUpdatedAtColumn=... (SPEC PATCH rules 1-5;
docs/api-contract.md#custom-data)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from tests.factories import make_org
from tests.test_custom_data_support import CUSTOMERS, assert_status_error, create_table, insert


async def _setup(app, client, synced_at="2024-01-01T10:00:00Z"):
    org = await make_org(app)
    await create_table(client, org)
    [record] = await insert(
        client, org, "customers", [{"name": "Ada", "score": 1, "synced_at": synced_at}]
    )
    return org, record


def _path(record, column="synced_at"):
    return f"/v1/data/customers/{record['id']}?sourceUpdatedAtColumn={column}"


async def test_newer_timestamp_applies(app, client):
    org, record = await _setup(app, client)
    response = await client.patch(
        _path(record), json={"synced_at": "2024-01-01T10:00:01Z", "score": 2}, headers=org.headers
    )
    assert response.status_code == 200
    patched = response.json()["record"]
    assert patched["score"] == 2 and patched["synced_at"] == "2024-01-01T10:00:01Z"
    assert patched["name"] == "Ada"


async def test_equal_or_older_timestamp_is_409_and_changes_nothing(app, client):
    org, record = await _setup(app, client)
    for stamp in (
        "2024-01-01T10:00:00Z",
        "2024-01-01T12:00:00+02:00",  # the same instant in another zone
        "2024-01-01T09:59:59.999999Z",
        "2023-06-01T00:00:00Z",
    ):
        response = await client.patch(
            _path(record), json={"synced_at": stamp, "score": 99}, headers=org.headers
        )
        assert "synced_at" in assert_status_error(response, 409), stamp
    unchanged = await client.get(f"/v1/data/customers/{record['id']}", headers=org.headers)
    assert unchanged.json() == {"record": record}


async def test_comparison_is_chronological_across_offsets(app, client):
    # Stored 08:00Z (written as 10:00+02:00); 09:00Z is newer although "09" < "10" as text.
    org, record = await _setup(app, client, synced_at="2024-01-01T10:00:00+02:00")
    response = await client.patch(
        _path(record), json={"synced_at": "2024-01-01T09:00:00+00:00"}, headers=org.headers
    )
    assert response.status_code == 200
    assert response.json()["record"]["synced_at"] == "2024-01-01T09:00:00Z"
    # And 10:30+03:00 (07:30Z) is older than the stored 09:00Z although it reads later.
    older = await client.patch(
        _path(record), json={"synced_at": "2024-01-01T10:30:00+03:00"}, headers=org.headers
    )
    assert_status_error(older, 409)


async def test_stored_null_applies(app, client):
    org, record = await _setup(app, client, synced_at=None)
    response = await client.patch(
        _path(record), json={"synced_at": "1970-01-01T00:00:00Z"}, headers=org.headers
    )
    assert response.status_code == 200
    assert response.json()["record"]["synced_at"] == "1970-01-01T00:00:00Z"


async def test_invalid_source_column_or_timestamp_is_422(app, client):
    org, record = await _setup(app, client)
    base = f"/v1/data/customers/{record['id']}"
    cases = [
        ("?sourceUpdatedAtColumn=score", {"score": 5}),  # not TIMESTAMP
        ("?sourceUpdatedAtColumn=name", {"name": "x"}),
        ("?sourceUpdatedAtColumn=nothing", {"nothing": "2030-01-01T00:00:00Z"}),  # no column
        ("?sourceUpdatedAtColumn=updated_at", {"updated_at": "2030-01-01T00:00:00Z"}),  # managed
        ("?sourceUpdatedAtColumn=synced_at", {"score": 5}),  # timestamp missing
        ("?sourceUpdatedAtColumn=synced_at", {"synced_at": None}),
        ("?sourceUpdatedAtColumn=synced_at", {"synced_at": "not a time"}),
        ("?sourceUpdatedAtColumn=synced_at", {"synced_at": 1704067200}),
        ("?sourceUpdatedAtColumn=synced_at", {}),
        ("?sourceUpdatedAtColumn=" + "a" * 64, {"synced_at": "2030-01-01T00:00:00Z"}),
        ("?sourceUpdatedAtColumn=Synced_At", {"synced_at": "2030-01-01T00:00:00Z"}),
        ("?sourceUpdatedAtColumn=synced_at%27--", {"synced_at": "2030-01-01T00:00:00Z"}),
        ("?sourceUpdatedAtColumn=", {"synced_at": "2030-01-01T00:00:00Z"}),
    ]
    for query, body in cases:
        response = await client.patch(base + query, json=body, headers=org.headers)
        assert_status_error(response, 422)
    unchanged = await client.get(base, headers=org.headers)
    assert unchanged.json() == {"record": record}


async def test_missing_record_or_table_is_404(app, client):
    org, _record = await _setup(app, client)
    body = {"synced_at": "2030-01-01T00:00:00Z"}
    missing = await client.patch(
        "/v1/data/customers/424242?sourceUpdatedAtColumn=synced_at", json=body, headers=org.headers
    )
    assert_status_error(missing, 404)
    no_table = await client.patch(
        "/v1/data/nope/1?sourceUpdatedAtColumn=synced_at", json=body, headers=org.headers
    )
    assert_status_error(no_table, 404)
    other = await make_org(app, "Globex")
    await create_table(client, other, CUSTOMERS)
    hidden = await client.patch(_path(_record), json=body, headers=other.headers)
    assert_status_error(hidden, 404)


async def test_concurrent_conditional_patches_keep_the_newest(app, client):
    org, record = await _setup(app, client, synced_at="2020-01-01T00:00:00Z")
    start = datetime(2024, 1, 1, tzinfo=UTC)
    stamps = [start + timedelta(seconds=i) for i in range(20)]
    order = [7, 19, 3, 11, 0, 15, 8, 2, 18, 5, 13, 1, 16, 9, 4, 12, 17, 6, 14, 10]

    async def patch(i):
        body = {"synced_at": stamps[i].isoformat(), "score": i}
        return await client.patch(_path(record), json=body, headers=org.headers)

    responses = await asyncio.gather(*(patch(i) for i in order))
    statuses = [r.status_code for r in responses]
    assert set(statuses) <= {200, 409}, statuses
    assert 200 in statuses
    final = (await client.get(f"/v1/data/customers/{record['id']}", headers=org.headers)).json()[
        "record"
    ]
    assert final["synced_at"] == "2024-01-01T00:00:19Z"
    assert final["score"] == 19
    # The newest patch always applies, whenever it ran.
    applied = [i for i, r in zip(order, responses, strict=True) if r.status_code == 200]
    assert 19 in applied
