"""Tools configured through the agents API run on real calls: the commit a call pinned gives the
worker its tools, and the agent's ``tools_secret`` (shown once, at creation) signs its function
tool's requests, verified by a real receiver (docs/tools.md)."""

from __future__ import annotations

from typing import Any

import orjson
from standardwebhooks.webhooks import Webhook

from tests.conftest import client_for
from tests.engine_support import FAST_ENGINE, create_call, events_of, wait_for_call
from tests.factories import make_org
from tests.llm_stub import Reply, StubLLM
from tests.webhook_receiver import Reply as HookReply
from tests.webhook_receiver import receiver


async def test_an_api_agents_function_tool_is_signed_with_its_tools_secret(make_app: Any) -> None:
    answer = orjson.dumps({"slots": ["9:00", "14:30"]})
    async with receiver(
        lambda _n: HookReply(headers={"content-type": "application/json"}, body=answer)
    ) as endpoint:
        brain = StubLLM(
            replies=[
                Reply("", "find_slots", {"day": "Friday"}),
                Reply("Goodbye!", "end_call", {}),
            ],
            after_tool=["Friday at nine or half past two."],
        )
        with brain:
            app = await make_app(
                **{
                    **FAST_ENGINE,
                    "simulated_call_seconds": 10,
                    "simulated_script": ["Thanks, bye."],
                    "llm_base_url": brain.base_url,
                    "llm_timeout_seconds": 5,
                    "webhook_allow_private_networks": True,
                }
            )
            org = await make_org(app)
            async with client_for(app) as client:
                created = await client.post(
                    "/v1/agents",
                    headers=org.headers,
                    json={
                        "name": "Riley",
                        "config": {
                            "prompt": "Book cleanings.",
                            "agent_speaks_first": False,
                            "tools": [
                                {
                                    "type": "function",
                                    "name": "find_slots",
                                    "url": endpoint.url,
                                    "parameters": {
                                        "type": "object",
                                        "properties": {"day": {"type": "string"}},
                                        "required": ["day"],
                                    },
                                }
                            ],
                        },
                    },
                )
                assert created.status_code == 201, created.text
                agent, secret = created.json()["agent"], created.json()["tools_secret"]
                call_id = await create_call(client, org, "+14155550150", agent_id=agent["id"])
                call = await wait_for_call(client, org, call_id)
                events = await events_of(client, org, call_id)
    [request] = endpoint.received
    payload = Webhook(secret).verify(request.body, request.headers)
    assert payload["tool"] == "find_slots" and payload["arguments"] == {"day": "Friday"}
    assert payload["call"]["agent_id"] == agent["id"]
    assert payload["call"]["agent_commit_id"] == call["agent_commit_id"]
    results = [e["text"] for e in call["transcripts"] if e["role"] == "tool"]
    assert results[0] == answer.decode()
    assert "Friday at nine or half past two." in [e.get("text") for e in call["transcripts"]]
    [used] = [e["data"] for e in events if e["type"] == "tool.called"][:1]
    assert used["name"] == "find_slots" and used["outcome"] == "ok"
