"""Replays: the caller's lines of real calls said again to a candidate commit, original tool
answers reused for the same tool and arguments, a per-call comparison; another organization's
call is 404."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.agent_tests_support import CONFIG
from tests.agents_support import commit, create_agent, head
from tests.factories import load, make_org
from tests.llm_stub import Reply, StubLLM

ASKS = Reply("Let me book that.", tool="book", arguments={"day": "Monday"})


@pytest.fixture
def llm() -> Iterator[StubLLM]:
    with StubLLM(
        replies=[ASKS, Reply("Bye!", tool="end_call", arguments={})],
        after_tool=["Booked."],
        summary="The caller booked Monday.",
    ) as stub:
        yield stub


@pytest.fixture
async def app(make_app: Any, llm: StubLLM) -> Any:
    return await make_app(llm_base_url=llm.base_url, worker="embedded", worker_poll_seconds=0.05)


def _call(agent: dict[str, Any], day: str, minute: int) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "status": "completed",
        "agent_id": agent["id"],
        "agent_commit_id": head(agent),
        "created_at": f"2026-11-20T10:{minute:02d}:00Z",
        "transcripts": [
            {"role": "assistant", "text": "Hi, this is Bright Smiles."},
            {"role": "user", "text": f"Can I come on {day}?"},
            {"role": "assistant", "function_name": "book", "arguments": {"day": day}, "text": ""},
            {"role": "tool", "function_name": "book", "text": '{"slot": "10:30"}'},
            {"role": "assistant", "text": "You are booked at 10:30."},
            {"role": "user", "text": "Thanks, bye."},
        ],
    }


async def _done(client, org, agent_id: str, replay_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        response = await client.get(
            f"/v1/agents/{agent_id}/replays/{replay_id}", headers=org.headers
        )
        assert response.status_code == 200, response.text
        replay: dict[str, Any] = response.json()["replay"]
        if replay["status"] != "running":
            return replay
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)


async def test_replaying_calls_against_a_branch_compares_each_call(app, client, llm):
    org = await make_org(app)
    agent = await create_agent(client, org, CONFIG)
    monday, tuesday = _call(agent, "Monday", 1), _call(agent, "Tuesday", 2)
    await load(app, org, {"calls": [monday, tuesday]})
    await client.post(
        f"/v1/agents/{agent['id']}/branches", headers=org.headers, json={"name": "next"}
    )
    made = await commit(client, org, agent["id"], branch="next", changes={"prompt": "Be quick."})

    response = await client.post(
        f"/v1/agents/{agent['id']}/replays",
        headers=org.headers,
        json={"ref": "next", "call_ids": [monday["id"]]},
    )
    assert response.status_code == 201, response.text
    started = response.json()["replay"]
    assert started["status"] == "running" and started["commit_id"] == made["commit"]["id"]
    replay = await _done(client, org, agent["id"], started["id"])
    assert replay["status"] == "done", replay
    [compared] = replay["calls"]
    assert compared["call_id"] == monday["id"]
    assert compared["original_commit_id"] == head(agent)
    assert compared["tool_calls"] == {
        "before": [{"name": "book", "arguments": {"day": "Monday"}}],
        "after": [
            {"name": "book", "arguments": {"day": "Monday"}},
            {"name": "end_call", "arguments": {}},
        ],
    }
    assert compared["same_tool_calls"] is False
    assert compared["ended"] == {"before": False, "after": True}
    after = compared["transcript_after"]
    # The same tool with the same arguments got the original answer.
    assert {"role": "tool", "function_name": "book", "text": '{"slot": "10:30"}'} in after
    assert [e["text"] for e in after if e["role"] == "user"] == [
        "Can I come on Monday?",
        "Thanks, bye.",
    ]
    assert compared["summary_after"] == "The caller booked Monday."

    # The latest completed call: Tuesday. Its book(Monday) is not the original question.
    response = await client.post(
        f"/v1/agents/{agent['id']}/replays", headers=org.headers, json={"last": 1}
    )
    replay = await _done(client, org, agent["id"], response.json()["replay"]["id"])
    [compared] = replay["calls"]
    assert compared["call_id"] == tuesday["id"]
    assert {"role": "tool", "function_name": "book", "text": '{"mocked":true}'} in (
        compared["transcript_after"]
    )


async def test_bad_replays_are_refused(app, client):
    org, other = await make_org(app), await make_org(app, "Other")
    agent = await create_agent(client, org, CONFIG)
    theirs = await create_agent(client, other, CONFIG)
    foreign = _call(theirs, "Monday", 3)
    await load(app, other, {"calls": [foreign]})
    base = f"/v1/agents/{agent['id']}/replays"
    cases = [
        ({"call_ids": [foreign["id"]]}, 404, "Call not found"),
        ({"call_ids": [str(uuid.uuid4())]}, 404, "Call not found"),
        ({"last": 1}, 422, "last: the agent has no completed calls"),
        ({"last": 101}, 422, "last"),
        ({"last": 0}, 422, "last"),
        ({}, 422, "either call_ids or last"),
        ({"last": 1, "call_ids": [foreign["id"]]}, 422, "either call_ids or last"),
        ({"call_ids": [str(uuid.uuid4()) for _ in range(101)]}, 422, "call_ids"),
        ({"ref": "nope", "last": 1}, 422, "ref"),
    ]
    for body, status, named in cases:
        response = await client.post(base, headers=org.headers, json=body)
        assert response.status_code == status, (body, response.text)
        assert named in response.json()["error"], (body, response.json())
    missing = await client.get(f"{base}/{uuid.uuid4()}", headers=org.headers)
    assert missing.status_code == 404 and missing.json()["error"] == "Replay not found"
