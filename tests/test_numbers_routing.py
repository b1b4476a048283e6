"""Numbers through the API and routed to an agent's branch (docs/agents.md). Errors {"error":
str}."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from tests.agents_support import create_agent
from tests.factories import load, make_org


async def test_create_list_route_and_delete_a_number(app, client):
    org = await make_org(app)
    agent = await create_agent(client, org)
    await client.post(
        f"/v1/agents/{agent['id']}/branches", headers=org.headers, json={"name": "beta"}
    )
    created = await client.post(
        "/v1/numbers",
        headers=org.headers,
        json={"number": "(415) 555-0101", "friendly_name": "Front desk", "agent_id": agent["id"]},
    )
    assert created.status_code == 201, created.text
    number = created.json()
    assert number["number"] == "+14155550101" and number["area_code"] == "415"
    assert number["country"] == "US" and number["friendly_name"] == "Front desk"
    assert number["agent"]["uuid"] == agent["id"] and number["agent"]["branch"] == "main"
    routed = await client.patch(
        f"/v1/numbers/{number['id']}", headers=org.headers, json={"agent_branch_name": "beta"}
    )
    assert routed.status_code == 200, routed.text
    assert routed.json()["agent"]["branch"] == "beta"
    assert routed.json()["friendly_name"] == "Front desk"
    listed = await client.get("/v1/numbers", headers=org.headers)
    assert listed.json()["numbers"] == [routed.json()]
    # neither the routed branch nor the agent can go while the number routes to them
    assert (
        await client.delete(f"/v1/agents/{agent['id']}/branches/beta", headers=org.headers)
    ).status_code == 409
    assert (
        await client.delete(f"/v1/agents/{agent['id']}", headers=org.headers)
    ).status_code == 409
    unrouted = await client.patch(
        f"/v1/numbers/{number['id']}", headers=org.headers, json={"agent_id": None}
    )
    assert unrouted.json()["agent"] is None
    assert (
        await client.delete(f"/v1/agents/{agent['id']}/branches/beta", headers=org.headers)
    ).status_code == 200
    deleted = await client.delete(f"/v1/numbers/{number['id']}", headers=org.headers)
    assert deleted.json() == {"success": True}
    assert (await client.get("/v1/numbers", headers=org.headers)).json() == {"numbers": []}
    again = await client.delete(f"/v1/numbers/{number['id']}", headers=org.headers)
    assert again.status_code == 404 and again.json() == {"error": "Phone number not found"}


async def test_a_number_is_unique_across_organizations(app, client):
    first, second = await make_org(app), await make_org(app, "Second")
    results = await asyncio.gather(
        *(
            client.post("/v1/numbers", headers=org.headers, json={"number": "+14155550102"})
            for org in (first, second, first, second)
        )
    )
    assert sorted(r.status_code for r in results) == [201, 409, 409, 409]
    assert all(set(r.json()) == {"error"} for r in results if r.status_code == 409)


@pytest.mark.parametrize(
    ("body", "word"),
    [
        pytest.param({}, "number", id="missing"),
        pytest.param({"number": "call me"}, "number", id="not-a-number"),
        pytest.param({"number": 14155550103}, "number", id="not-text"),
        pytest.param({"number": "+14155550103", "agent_id": "x"}, "agent_id", id="bad-agent-uuid"),
        pytest.param({"number": "+14155550103", "agent_id": "THEIRS"}, "agent_id", id="other-org"),
        pytest.param(
            {"number": "+14155550103", "agent_id": "MINE", "agent_branch_name": "nope"},
            "agent_branch_name",
            id="unknown-branch",
        ),
        pytest.param({"number": "+14155550103", "friendly_name": " "}, "friendly_name", id="blank"),
    ],
)
async def test_bad_number_bodies_are_422(app, client, body, word):
    org, other = await make_org(app), await make_org(app, "Other")
    mine, theirs = await create_agent(client, org), await create_agent(client, other)
    names = {"MINE": mine["id"], "THEIRS": theirs["id"]}
    body = {k: names.get(v, v) if isinstance(v, str) else v for k, v in body.items()}
    response = await client.post("/v1/numbers", headers=org.headers, json=body)
    assert response.status_code == 422, response.text
    assert set(response.json()) == {"error"} and word in response.json()["error"]
    assert (await client.get("/v1/numbers", headers=org.headers)).json() == {"numbers": []}


async def test_another_organizations_number_cannot_be_routed_or_deleted(app, client):
    org, other = await make_org(app), await make_org(app, "Other")
    number_id = str(uuid.uuid4())
    await load(app, other, {"phone_numbers": [{"id": number_id, "number": "+14155550104"}]})
    agent = await create_agent(client, org)
    patched = await client.patch(
        f"/v1/numbers/{number_id}", headers=org.headers, json={"agent_id": agent["id"]}
    )
    assert patched.status_code in (404, 422)
    assert (await client.delete(f"/v1/numbers/{number_id}", headers=org.headers)).status_code == 404
    theirs = (await client.get("/v1/numbers", headers=other.headers)).json()["numbers"]
    assert [n["agent"] for n in theirs] == [None]


async def test_fixture_numbers_take_agent_branch_name(app, client):
    org = await make_org(app)
    await load(
        app,
        org,
        {
            "agents": [
                {
                    "id": 3,
                    "name": "Riley",
                    "config": {"prompt": "A"},
                    "branches": [{"name": "beta", "config": {"prompt": "B"}}],
                }
            ],
            "phone_numbers": [
                {"number": "+14155550105", "agent_id": 3, "agent_branch_name": "beta"}
            ],
        },
    )
    [number] = (await client.get("/v1/numbers", headers=org.headers)).json()["numbers"]
    assert number["agent"]["branch"] == "beta"
    agent = (await client.get(f"/v1/agents/{number['agent']['uuid']}", headers=org.headers)).json()
    assert agent["agent"]["config"] == {"prompt": "A"}
    assert [b["name"] for b in agent["agent"]["branches"]] == ["beta", "main"]
