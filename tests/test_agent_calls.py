"""Calls run a commit (docs/agents.md): POST /calls resolves the agent's branch head or a pinned
commit when the call is created and records the four SPEC fields."""

from __future__ import annotations

import uuid

import pytest

from tests.agents_support import commit, create_agent, head
from tests.factories import make_org

TO = "+14155550123"


async def _call(client, org, expect=201, **body):
    response = await client.post("/v1/calls", headers=org.headers, json={"to_number": TO, **body})
    assert response.status_code == expect, response.text
    return response.json()


async def test_call_runs_the_branch_head_at_creation(app, client):
    org = await make_org(app)
    agent = await create_agent(client, org, {"prompt": "v1"})
    main = next(b for b in agent["branches"] if b["name"] == "main")
    created = await _call(client, org, agent_id=agent["id"])
    call = created["call"]
    assert call["agent_id"] == agent["id"]
    assert call["agent_branch"] == main["id"] and call["agent_branch_name"] == "main"
    assert call["agent_commit_id"] == head(agent)
    assert call["call_prompt"] is None  # the call's own field is not changed by the agent
    await commit(client, org, agent["id"], changes={"prompt": "v2"})
    again = await client.get(f"/v1/calls/{call['id']}", headers=org.headers)
    assert again.json()["call"]["agent_commit_id"] == head(agent)


async def test_call_on_a_branch_and_pinned_to_a_commit(app, client):
    org = await make_org(app)
    agent = await create_agent(client, org)
    first = head(agent)
    await client.post(
        f"/v1/agents/{agent['id']}/branches", headers=org.headers, json={"name": "beta"}
    )
    beta = await commit(client, org, agent["id"], branch="beta", changes={"prompt": "beta"})
    on_beta = await _call(client, org, agent_id=agent["id"], agent_branch_name="beta")
    assert on_beta["call"]["agent_branch_name"] == "beta"
    assert on_beta["call"]["agent_commit_id"] == beta["commit"]["id"]
    pinned = await _call(client, org, agent_id=agent["id"], agent_commit_id=first)
    assert pinned["call"]["agent_commit_id"] == first
    assert pinned["call"]["agent_branch_name"] == "main"


async def test_call_without_an_agent_is_unchanged(app, client):
    org = await make_org(app)
    call = (await _call(client, org))["call"]
    assert call["agent_id"] is None and call["agent_commit_id"] is None
    assert call["agent_branch"] is None and call["agent_branch_name"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param(
            {"agent_id": "AGENT", "agent_branch_name": "nope"}, "agent_branch_name", id="branch"
        ),
        pytest.param(
            {"agent_id": "AGENT", "agent_commit_id": str(uuid.uuid4())},
            "agent_commit_id",
            id="commit",
        ),
        pytest.param(
            {"agent_id": "AGENT", "agent_commit_id": "OTHER_COMMIT"},
            "agent_commit_id",
            id="other-agents-commit",
        ),
        pytest.param({"agent_id": str(uuid.uuid4())}, "agent_id", id="agent"),
        pytest.param({"agent_id": "THEIRS"}, "agent_id", id="other-org"),
        pytest.param({"agent_id": "ARCHIVED"}, "agent_id", id="archived"),
        pytest.param({"agent_branch_name": "main"}, "agent_id", id="branch-without-agent"),
        pytest.param(
            {"agent_id": "AGENT", "agent_commit_id": "x"}, "agent_commit_id", id="bad-uuid"
        ),
    ],
)
async def test_unknown_or_foreign_agent_references_are_422(app, client, body, field):
    org, other = await make_org(app), await make_org(app, "Other")
    agent = await create_agent(client, org)
    second = await create_agent(client, org)
    archived = await create_agent(client, org)
    await client.delete(f"/v1/agents/{archived['id']}", headers=org.headers)
    theirs = await create_agent(client, other)
    names = {
        "AGENT": agent["id"],
        "THEIRS": theirs["id"],
        "ARCHIVED": archived["id"],
        "OTHER_COMMIT": head(second),
    }
    body = {k: names.get(v, v) for k, v in body.items()}
    response = await _call(client, org, expect=422, **body)
    assert response["error"].startswith(field), response
    listed = await client.get("/v1/calls", headers=org.headers)
    assert listed.json()["total_count"] == 0


async def test_required_variables_come_from_params_or_contact_data(app, client):
    org = await make_org(app)
    agent = await create_agent(
        client, org, {"prompt": "Hi {{name}}", "required_variables": ["name", "appointment"]}
    )
    missing = await _call(client, org, expect=422, agent_id=agent["id"], params={"name": "Ada"})
    assert missing["error"] == "params: missing required variables: appointment"
    both = await _call(client, org, expect=422, agent_id=agent["id"])
    assert "name, appointment" in both["error"]
    await client.put(
        f"/v1/contacts/{TO}/data", headers=org.headers, json={"data": {"appointment": "3pm"}}
    )
    ok = await _call(client, org, agent_id=agent["id"], params={"name": "Ada"})
    assert ok["call"]["agent_commit_id"] == head(agent)
