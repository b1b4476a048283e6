"""An inbound call runs the head of its number's branch at the moment it is answered (§15)."""

from __future__ import annotations

from callplane.telephony.base import InboundOffer
from tests.agents_support import commit
from tests.conftest import client_for
from tests.engine_support import engine_app, wait_for_call
from tests.factories import load, make_org

AGENT = "6f1c2a1e-8a43-4c39-9a55-1d2f3e4a5b01"


async def test_inbound_calls_record_the_branch_head_when_answered(make_app):
    app = await engine_app(make_app, simulated_call_seconds=0.2)
    org = await make_org(app)
    await load(
        app,
        org,
        {
            "agents": [
                {
                    "uuid": AGENT,
                    "name": "Riley",
                    "config": {"prompt": "main"},
                    "branches": [{"name": "beta", "config": {"prompt": "beta"}}],
                }
            ],
            "phone_numbers": [
                {"number": "+14155550160", "agent_id": AGENT, "agent_branch_name": "beta"}
            ],
        },
    )
    adapter = app.state.engine.adapter
    async with client_for(app) as client:
        agent = (await client.get(f"/v1/agents/{AGENT}", headers=org.headers)).json()["agent"]
        beta = next(b for b in agent["branches"] if b["name"] == "beta")
        seen = []
        for ref in ("t1", "t2"):
            assert await adapter.ring(
                InboundOffer(to_number="+14155550160", from_number="+14155557777", call_ref=ref)
            )
            calls = (await client.get("/v1/calls", headers=org.headers)).json()["calls"]
            newest = calls[0]
            seen.append(newest["agent_commit_id"])
            assert newest["agent_id"] == AGENT and newest["agent_branch_name"] == "beta"
            assert newest["agent_branch"] == beta["id"]
            await wait_for_call(client, org, newest["id"])
            if ref == "t1":
                moved = await commit(client, org, AGENT, branch="beta", changes={"prompt": "b2"})
    assert seen == [beta["head"], moved["commit"]["id"]]
