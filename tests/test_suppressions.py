"""The do-not-call list over HTTP, and POST /calls refusing a listed number."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from tests.campaigns_support import status_error
from tests.factories import make_org


async def test_the_list_adds_finds_and_removes_numbers(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    org = await make_org(app)
    other = await make_org(app, "Other")
    added = await client.post(
        "/v1/suppressions",
        json={"phone_number": "+1 (415) 555-0100", "reason": "asked by email"},
        headers=org.headers,
    )
    assert added.status_code == 201, added.text
    assert added.json()["suppression"]["phone_number"] == "+14155550100"
    assert added.json()["suppression"]["reason"] == "asked by email"
    await client.post(
        "/v1/suppressions", json={"phone_number": "+14155550101"}, headers=org.headers
    )
    listed = (await client.get("/v1/suppressions", headers=org.headers)).json()
    assert listed["total_count"] == 2 and listed["total_pages"] == 1
    assert [s["phone_number"] for s in listed["suppressions"]] == ["+14155550101", "+14155550100"]
    found = await client.get(
        "/v1/suppressions", params={"phone_number": "415-555-0100"}, headers=org.headers
    )
    assert [s["phone_number"] for s in found.json()["suppressions"]] == ["+14155550100"]
    theirs = (await client.get("/v1/suppressions", headers=other.headers)).json()
    assert theirs["suppressions"] == []
    status_error(
        await client.delete("/v1/suppressions/+14155550100", headers=other.headers), 404, "not"
    )
    deleted = await client.delete("/v1/suppressions/+14155550100", headers=org.headers)
    assert deleted.status_code == 200 and deleted.json() == {"success": True}
    status_error(
        await client.delete("/v1/suppressions/+14155550100", headers=org.headers), 404, "not"
    )


async def test_bad_numbers_are_422(app: FastAPI, client: httpx.AsyncClient) -> None:
    org = await make_org(app)
    for body in ({"phone_number": "call me"}, {}, {"phone_number": "+14155550100", "x": 1}):
        status_error(await client.post("/v1/suppressions", json=body, headers=org.headers), 422, "")
    status_error(await client.delete("/v1/suppressions/nope", headers=org.headers), 422, "phone")
    status_error(
        await client.get("/v1/suppressions?phone_number=abc", headers=org.headers), 422, "phone"
    )


async def test_a_call_to_a_listed_number_is_refused_unless_asked_for(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    org = await make_org(app)
    await client.post(
        "/v1/suppressions", json={"phone_number": "+14155550100"}, headers=org.headers
    )
    refused = await client.post("/v1/calls", json={"to_number": "4155550100"}, headers=org.headers)
    status_error(refused, 422, "do-not-call")
    asked = await client.post(
        "/v1/calls",
        json={"to_number": "+14155550100", "ignore_suppression": True},
        headers=org.headers,
    )
    assert asked.status_code == 201, asked.text
    other = await make_org(app, "Other")
    theirs = await client.post(
        "/v1/calls", json={"to_number": "+14155550100"}, headers=other.headers
    )
    assert theirs.status_code == 201, theirs.text
