"""Traffic splits: calls that name neither branch nor commit pick a branch by a stable hash of
the agent and the other party's number; the same caller always meets the same branch."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter

from callplane.agents.traffic import pick_branch
from callplane.telephony.base import InboundOffer
from tests.agents_support import commit, create_agent
from tests.campaigns_support import create_campaign, open_schedule
from tests.conftest import client_for
from tests.engine_support import engine_app, wait_for_call
from tests.factories import load, make_org

STATUS_KEYS = {"status", "success", "error", "errors"}
SPLIT = {"splits": [{"branch": "main", "weight": 50}, {"branch": "canary", "weight": 50}]}


async def _with_canary(client, org):
    agent = await create_agent(client, org, {"prompt": "main"})
    await client.post(
        f"/v1/agents/{agent['id']}/branches", headers=org.headers, json={"name": "canary"}
    )
    made = await commit(client, org, agent["id"], branch="canary", changes={"prompt": "canary"})
    return agent, made["commit"]["id"]


async def test_a_split_is_set_read_guarded_and_removed(app, client):
    org = await make_org(app)
    agent, _ = await _with_canary(client, org)
    url = f"/v1/agents/{agent['id']}/traffic"
    assert (await client.get(url, headers=org.headers)).json() == {"traffic": {"splits": []}}
    bad = [
        (
            {"splits": [{"branch": "main", "weight": 50}, {"branch": "canary", "weight": 49}]},
            "splits: the weights sum to 99, not 100",
        ),
        ({"splits": [{"branch": "main", "weight": 100}]}, "splits"),
        ({"splits": [{"branch": f"b{n}", "weight": 10} for n in range(6)]}, "splits"),
        (
            {"splits": [{"branch": "main", "weight": 50}, {"branch": "main", "weight": 50}]},
            "each branch may appear once",
        ),
        (
            {"splits": [{"branch": "main", "weight": 50}, {"branch": "nope", "weight": 50}]},
            "splits.1.branch: no branch nope",
        ),
        (
            {"splits": [{"branch": "main", "weight": 0}, {"branch": "canary", "weight": 100}]},
            "splits.0.weight",
        ),
        ({}, "splits"),
    ]
    for body, named in bad:
        response = await client.put(url, headers=org.headers, json=body)
        assert response.status_code == 422, (body, response.text)
        assert set(response.json()) == STATUS_KEYS and named in response.json()["error"], body
    put = await client.put(url, headers=org.headers, json=SPLIT)
    assert put.status_code == 200 and put.json() == {"traffic": SPLIT}
    assert (await client.get(url, headers=org.headers)).json() == {"traffic": SPLIT}
    refused = await client.delete(f"/v1/agents/{agent['id']}/branches/canary", headers=org.headers)
    assert refused.status_code == 409 and "traffic split" in refused.json()["error"]
    removed = await client.delete(url, headers=org.headers)
    assert removed.json() == {"traffic": {"splits": []}}
    other = await make_org(app, "Other")
    assert (await client.get(url, headers=other.headers)).status_code == 404


async def test_post_calls_with_only_the_agent_follow_the_split(app, client):
    org = await make_org(app)
    agent, canary_head = await _with_canary(client, org)
    await client.put(f"/v1/agents/{agent['id']}/traffic", headers=org.headers, json=SPLIT)

    async def call(number: str, **extra):
        response = await client.post(
            "/v1/calls",
            headers=org.headers,
            json={"to_number": number, "agent_id": agent["id"], **extra},
        )
        assert response.status_code == 201, response.text
        return response.json()["call"]

    numbers = [f"+1415555{n:04d}" for n in range(100, 140)]
    first = {n: (await call(n))["agent_branch_name"] for n in numbers}
    assert set(Counter(first.values())) == {"main", "canary"}
    for number in numbers[:10]:  # the same caller meets the same branch
        again = await call(number)
        assert again["agent_branch_name"] == first[number]
        if first[number] == "canary":
            assert again["agent_commit_id"] == canary_head
    # Naming a branch or a commit is not split.
    on_canary = [n for n in numbers if first[n] == "canary"]
    named = await call(on_canary[0], agent_branch_name="main")
    assert named["agent_branch_name"] == "main"


async def test_inbound_calls_to_a_number_without_a_branch_follow_the_split(make_app):
    app = await engine_app(make_app, simulated_call_seconds=0.2)
    org = await make_org(app)
    async with client_for(app) as client:
        agent, canary_head = await _with_canary(client, org)
        await load(
            app, org, {"phone_numbers": [{"number": "+14155550161", "agent_id": agent["id"]}]}
        )
        await client.put(f"/v1/agents/{agent['id']}/traffic", headers=org.headers, json=SPLIT)
        adapter = app.state.engine.adapter
        met: dict[str, str] = {}
        for n, caller in enumerate([f"+1415556{k:04d}" for k in range(12)] * 2):
            offer = InboundOffer(to_number="+14155550161", from_number=caller, call_ref=f"r{n}")
            assert await adapter.ring(offer)
            newest = (await client.get("/v1/calls", headers=org.headers)).json()["calls"][0]
            assert newest["from_number"] == caller
            assert (
                met.setdefault(caller, newest["agent_branch_name"]) == newest["agent_branch_name"]
            )
            if newest["agent_branch_name"] == "canary":
                assert newest["agent_commit_id"] == canary_head
            await wait_for_call(client, org, newest["id"])
    assert set(met.values()) == {"main", "canary"}


async def test_a_campaign_on_main_follows_the_split(make_app):
    app = await engine_app(make_app)
    org = await make_org(app)
    async with client_for(app) as client:
        agent, canary_head = await _with_canary(client, org)
        await client.put(f"/v1/agents/{agent['id']}/traffic", headers=org.headers, json=SPLIT)
        campaign = await create_campaign(
            client,
            org,
            agent=agent["id"],
            schedule=open_schedule(),
            pacing={"max_concurrent": 5, "calls_per_minute": 6000},
        )
        numbers = [f"+1555000{n:04d}" for n in range(1200, 1212)]
        await client.post(
            f"/v1/campaigns/{campaign['id']}/recipients",
            json={"recipients": [{"phone_number": n} for n in numbers]},
            headers=org.headers,
        )
        await client.post(f"/v1/campaigns/{campaign['id']}/start", headers=org.headers)
        deadline = time.monotonic() + 60
        while True:
            calls = (await client.get("/v1/calls?page_size=100", headers=org.headers)).json()[
                "calls"
            ]
            if len(calls) >= len(numbers):
                break
            assert time.monotonic() < deadline, calls
            await asyncio.sleep(0.1)
    branches = {c["to_number"]: c["agent_branch_name"] for c in calls}
    splits = SPLIT["splits"]
    assert branches == {n: pick_branch(splits, uuid.UUID(agent["id"]), n) for n in numbers}
    assert set(branches.values()) == {"main", "canary"}
    assert all(
        c["agent_commit_id"] == canary_head for c in calls if c["agent_branch_name"] == "canary"
    )
