"""A worker runs the commit a call pinned (docs/agents.md), through the agents domain: the commit's
first line rendered with the call's params, the callee's contact data and the config's defaults,
and the ``agent.started`` event naming the commit and what was missing."""

from __future__ import annotations

from tests.agents_support import commit, create_agent, head
from tests.conftest import client_for
from tests.engine_support import create_call, engine_app, events_of, wait_for_call
from tests.factories import make_org

TO = "+14155550123"


async def test_a_simulated_call_says_the_pinned_commits_first_line_with_its_variables(make_app):
    app = await engine_app(make_app)
    org = await make_org(app)
    async with client_for(app) as client:
        agent = await create_agent(
            client,
            org,
            {
                "first_message": "Hi {{name}}, this is {{clinic|Bright Smiles}} about {{plan}}"
                " on {{call.to_number}}.{{ unknown }} {{contact.name|Dear caller}}",
                "variables": {"clinic": "Riley's clinic"},
            },
        )
        pinned = head(agent)
        # The branch moves after the call is created: the call keeps the commit it pinned.
        response = await client.put(
            f"/v1/contacts/{TO}/data", headers=org.headers, json={"data": {"plan": "gold"}}
        )
        assert response.status_code == 200, response.text
        call_id = await create_call(client, org, TO, agent_id=agent["id"], params={"name": "Ada"})
        await commit(client, org, agent["id"], changes={"first_message": "Changed."})
        call = await wait_for_call(client, org, call_id)
        events = await events_of(client, org, call_id)
    assert call["agent_commit_id"] == pinned
    assert call["transcripts"][0]["text"] == (
        f"Hi Ada, this is Riley's clinic about gold on {TO}. Dear caller"
    )
    [started] = [e for e in events if e["type"] == "agent.started"]
    # contact.name has a default in the template: it is not missing.
    assert started["data"] == {"commit_id": pinned, "missing_variables": ["unknown"]}
