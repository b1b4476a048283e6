"""Tools on real calls (docs/tools.md): the real app and worker over SQLite and
PostgreSQL, the simulated network, a stub brain asking for each tool, and a real local HTTP
receiver verifying the function tool's signature."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import orjson
from standardwebhooks.webhooks import Webhook

from callplane.tools.transfer import HANDOFF_INSTRUCTIONS, from_caller_lines
from callplane.webhooks.signing import new_secret
from tests.conftest import client_for
from tests.engine_support import FAST_ENGINE, agent_engine, create_call, events_of, wait_for_call
from tests.factories import OrgHandle, make_org
from tests.llm_stub import Reply, StubLLM
from tests.webhook_receiver import Reply as HookReply
from tests.webhook_receiver import receiver

CART = {"value": 12.5, "checkout": {"order_ids": ["o-1"]}}


@asynccontextmanager
async def agent_calls(
    make_app: Any,
    brain: StubLLM,
    config: dict[str, Any],
    *,
    script: Sequence[str],
    secret: str | None = None,
) -> AsyncIterator[Any]:
    """An app whose every call runs an agent commit with ``config`` (as the agents domain will
    give it), with its own worker."""
    app = await make_app(
        **{
            **FAST_ENGINE,
            "worker": "off",
            "simulated_call_seconds": 10,
            "simulated_script": list(script),
            "llm_base_url": brain.base_url,
            "llm_timeout_seconds": 5,
            "webhook_allow_private_networks": True,
        }
    )

    async with agent_engine(app, config, tools_secret=secret, agent_name="Ada"):
        yield app


def tool_uses(call: dict[str, Any]) -> list[tuple[str, str, Any]]:
    return [
        (e["role"], e["function_name"], e["arguments"] if e["role"] == "assistant" else e["text"])
        for e in call["transcripts"]
        if e.get("function_name")
    ]


async def place(client: Any, org: OrgHandle, to_number: str) -> tuple[dict[str, Any], list[Any]]:
    call_id = await create_call(client, org, to_number, agent_speaks_first=False)
    call = await wait_for_call(client, org, call_id)
    return call, await events_of(client, org, call_id)


async def test_a_function_tool_is_a_signed_post_whose_answer_and_cart_reach_the_call(
    make_app: Any,
) -> None:
    secret = new_secret()
    answer = orjson.dumps({"status": "shipped", "cart": CART})
    async with receiver(
        lambda _n: HookReply(headers={"content-type": "application/json"}, body=answer)
    ) as endpoint:
        config = {
            "tools": [
                {
                    "type": "function",
                    "name": "lookup_order",
                    "description": "Find an order",
                    "url": endpoint.url,
                    "parameters": {
                        "type": "object",
                        "properties": {"order_id": {"type": "string"}},
                        "required": ["order_id"],
                    },
                    "timeout_seconds": 5,
                },
                {"type": "send_dtmf"},
            ]
        }
        brain = StubLLM(
            replies=[
                # Two calls in one reply, streamed interleaved: both run.
                Reply(
                    "",
                    "lookup_order",
                    {"order_id": "42"},
                    more_tools=(("send_dtmf", {"digits": "1#"}),),
                ),
                Reply("Goodbye!", "end_call", {}),
            ],
            after_tool=["Your order has shipped."],
        )
        with brain:
            async with agent_calls(
                make_app, brain, config, script=["Thanks, bye."], secret=secret
            ) as app:
                org = await make_org(app)
                async with client_for(app) as client:
                    call, events = await place(client, org, "+14155550150")
    [request] = endpoint.received
    payload = Webhook(secret).verify(request.body, request.headers)
    assert payload["type"] == "tool.call" and payload["tool"] == "lookup_order"
    assert payload["arguments"] == {"order_id": "42"}
    assert payload["call"] == {
        "id": call["id"],
        "direction": "outbound",
        "from_number": call["from_number"],
        "to_number": "+14155550150",
        "params": call["params"],
        "external_identifiers": call["external_identifiers"],
        "agent_id": None,
        "agent_commit_id": "commit-1",
    }
    uses = tool_uses(call)
    assert uses[:2] == [
        ("assistant", "lookup_order", {"order_id": "42"}),
        ("assistant", "send_dtmf", {"digits": "1#"}),
    ]
    assert sorted(uses[2:4]) == [
        ("tool", "lookup_order", orjson.dumps({"status": "shipped", "cart": CART}).decode()),
        ("tool", "send_dtmf", '{"sent":"1#"}'),
    ]
    assert "Your order has shipped." in [e.get("text") for e in call["transcripts"]]
    assert call["cart"] == CART
    offered = brain.streamed_requests()[0]["tools"]
    assert [t["function"]["name"] for t in offered] == [
        "lookup_order",
        "send_dtmf",
        "end_call",
        "opt_out",
    ]
    # The brain read both answers back, each under its own call id.
    after = brain.streamed_requests()[1]["messages"]
    answered = [m["tool_call_id"] for m in after if m["role"] == "tool"]
    [asked] = [m for m in after if m.get("tool_calls")]
    assert answered == [c["id"] for c in asked["tool_calls"]] and len(answered) == 2
    called = {e["data"]["name"]: e["data"] for e in events if e["type"] == "tool.called"}
    assert called["lookup_order"]["outcome"] == called["send_dtmf"]["outcome"] == "ok"


async def test_a_refused_transfer_is_told_and_an_accepted_one_is_recorded_for_the_screen_pop(
    make_app: Any,
) -> None:
    config = {
        "tools": [
            {
                "type": "transfer_call",
                "destinations": [
                    {"name": "billing", "number": "+14155550005"},
                    {
                        "name": "sales",
                        "number": "+14155550100",
                        "handoff_provider": "genesys",
                        "message": "Transferring you to sales now.",
                    },
                ],
            }
        ]
    }
    brain = StubLLM(
        replies=[
            Reply("", "transfer_call", {"destination": "billing"}),
            Reply("", "transfer_call", {"destination": "sales"}),
        ],
        after_tool=["Billing is busy, shall I try sales?"],
    )
    with brain:
        async with agent_calls(make_app, brain, config, script=["Yes please."]) as app:
            org = await make_org(app, "Bright Smiles")
            other = await make_org(app, "Other")
            async with receiver() as hooks, client_for(app) as client:
                hook = await client.post(
                    "/v1/webhooks",
                    json={"url": hooks.url, "events": ["call.transferred"]},
                    headers=org.headers,
                )
                assert hook.status_code == 201, hook.text
                call_id = await create_call(client, org, "+14155550151", agent_speaks_first=False)
                await wait_for_call(client, org, call_id)
                delivery = await hooks.wait_for_event("call.transferred")
                call = (await client.get(f"/v1/calls/{call_id}", headers=org.headers)).json()[
                    "call"
                ]
                events = await events_of(client, org, call_id)
                token = call["screen_pop_token"]
                popped = await client.get(f"/v1/calls/screen_pop/{token}", headers=org.headers)
                stranger = await client.get(f"/v1/calls/screen_pop/{token}", headers=other.headers)
                nonsense = await client.get(
                    "/v1/calls/screen_pop/..%2F..%2Fetc", headers=org.headers
                )
    uses = tool_uses(call)
    assert uses[1][0] == "tool" and "did not go through: busy" in uses[1][2]
    assert uses[-1] == ("tool", "transfer_call", '{"transferred":true,"destination":"sales"}')
    lines = [e.get("text") for e in call["transcripts"] if e["role"] == "assistant"]
    assert "Transferring you to sales now." in lines
    assert call["transferred"] is True and call["status"] == "completed"
    assert len(token) >= 22 and token.replace("-", "").replace("_", "").isalnum()
    handoff = call["handoff_metadata"]["genesys"]
    assert handoff["conversation_id"].startswith("simulated-")
    assert (handoff["tenant_name"], handoff["campaign_name"]) == ("Bright Smiles", "Ada")
    assert handoff["transferred_at"].endswith("Z")
    types = [e["type"] for e in events]
    assert types.index("call.transferred") < types.index("call.ended")
    assert events[types.index("call.ended")]["data"]["reason"] == "the call was transferred"
    assert popped.status_code == 200 and popped.json()["call"]["id"] == call_id
    assert popped.json()["success"] is True
    assert stranger.status_code == 404 and nonsense.status_code == 404
    body = orjson.loads(delivery.body)
    assert body["data"]["call"]["id"] == call_id


async def test_a_warm_transfer_briefs_the_person_with_a_summary_and_a_busy_one_is_told(
    make_app: Any,
) -> None:
    summary = "A caller wants help with a double charge. They would like a refund."
    config = {
        "tools": [
            {
                "type": "transfer_call",
                "destinations": [
                    {"name": "billing", "number": "+14155550005", "mode": "warm"},
                    {
                        "name": "sales",
                        "number": "+14155550100",
                        "mode": "warm",
                        "handoff_provider": "genesys",
                        "message": "Let me put you through to sales.",
                    },
                ],
            }
        ]
    }
    brain = StubLLM(
        replies=[
            Reply("", "transfer_call", {"destination": "billing"}),
            Reply("", "transfer_call", {"destination": "sales"}),
        ],
        after_tool=["Billing is busy, shall I try sales?"],
        summary=summary,
    )
    with brain:
        async with agent_calls(make_app, brain, config, script=["Yes please."]) as app:
            org = await make_org(app, "Bright Smiles")
            async with client_for(app) as client:
                call, events = await place(client, org, "+14155550152")
            briefed = app.state.engine.adapter.briefed
        summary_requests = [
            r
            for r in brain.requests
            if any(m.get("content") == HANDOFF_INSTRUCTIONS for m in r["messages"])
        ]
    uses = tool_uses(call)
    assert "did not go through: busy" in uses[1][2]
    assert uses[-1] == ("tool", "transfer_call", '{"transferred":true,"destination":"sales"}')
    assert call["transferred"] is True and call["status"] == "completed"
    assert call["handoff_metadata"]["genesys"]["conversation_id"].startswith("simulated-")
    # The person was told the brain's summary of the call so far (the caller's "Yes please.").
    assert briefed == [summary]
    [asked] = summary_requests
    assert "Yes please." in asked["messages"][-1]["content"]
    types = [e["type"] for e in events]
    assert types.index("call.transferred") < types.index("call.ended")
    assert events[types.index("call.ended")]["data"]["reason"] == "the call was transferred"


async def test_tables_and_contact_data_stay_in_the_call_s_organization(make_app: Any) -> None:
    config = {
        "tools": [
            {"type": "query_table", "name": "find", "table": "orders", "columns": ["item"]},
            {"type": "query_table", "name": "theirs", "table": "secret_orders"},
            {"type": "insert_record", "name": "add", "table": "orders"},
            {"type": "contact_data", "writable": True},
        ]
    }
    brain = StubLLM(
        replies=[
            Reply("", "find", {"filters": [{"column": "item", "op": "eq", "value": "pen"}]}),
            Reply("Bye!", "end_call", {}),
        ],
        # Five rounds of tools in one answer, the most there are: the sixth request offers
        # none, and the brain just speaks.
        after_tool=[
            Reply("", "theirs", {}),
            Reply("", "add", {"record": {"item": "ink", "qty": "lots"}}),
            Reply("", "add", {"record": {"item": "ink", "qty": 2}}),
            Reply("", "contact_data", {"set": {"plan": "gold"}}),
            "Done.",
        ],
    )
    table = {
        "name": "orders",
        "columns": [{"name": "item", "type": "TEXT"}, {"name": "qty", "type": "INTEGER"}],
    }
    with brain:
        async with agent_calls(make_app, brain, config, script=["Bye."]) as app:
            mine, theirs = await make_org(app, "Mine"), await make_org(app, "Theirs")
            async with client_for(app) as client:
                for org, name in ((mine, "orders"), (theirs, "orders"), (theirs, "secret_orders")):
                    made = await client.post(
                        "/v1/data/tables", json={**table, "name": name}, headers=org.headers
                    )
                    assert made.status_code == 201, made.text
                for org, qty in ((mine, 1), (theirs, 99)):
                    added = await client.post(
                        "/v1/data/orders",
                        json={"records": [{"item": "pen", "qty": qty}]},
                        headers=org.headers,
                    )
                    assert added.status_code == 201, added.text
                put = await client.put(
                    "/v1/contacts/%2B14155550152/data",
                    json={"data": {"name": "Dana"}},
                    headers=mine.headers,
                )
                assert put.status_code == 200, put.text
                call, _events = await place(client, mine, "+14155550152")
                records = (await client.get("/v1/data/orders", headers=mine.headers)).json()
                their_records = (await client.get("/v1/data/orders", headers=theirs.headers)).json()
                contact = (
                    await client.get("/v1/contacts/%2B14155550152/data", headers=mine.headers)
                ).json()
    answers = [text for role, _name, text in tool_uses(call) if role == "tool"]
    found = orjson.loads(answers[0])
    assert [r.get("item") for r in found["records"]] == ["pen"]
    assert all(set(r) <= {"id", "item"} for r in found["records"])  # qty is not shown
    assert "not found" in answers[1].lower()  # another organization's table name
    assert "qty" in answers[2]  # the API's own validation
    assert orjson.loads(answers[3])["record"]["qty"] == 2
    assert "organization_id" not in answers[3]
    assert orjson.loads(answers[4]) == {"data": {"name": "Dana", "plan": "gold"}}
    assert sorted(r["item"] for r in records["records"]) == ["ink", "pen"]
    assert [r["qty"] for r in their_records["records"]] == [99]
    assert contact["data"] == {"name": "Dana", "plan": "gold"}


def test_without_a_brain_the_warm_summary_is_the_caller_s_own_last_words() -> None:
    transcript = [
        {"role": "assistant", "text": "Hi, this is Ada. How can I help?"},
        {"role": "user", "text": "Hello."},
        {"role": "user", "text": "I was charged twice for my order."},
        {"role": "assistant", "function_name": "transfer_call", "text": ""},
        {"role": "user", "text": "Please put me through to someone. " * 30},
    ]
    said = from_caller_lines(transcript)
    assert said.startswith("A caller is being put through to you. They said: I was charged")
    # A rambling caller is cut at a sentence end: the person is not kept listening.
    assert len(said) <= 320 and said.endswith(".")
    assert "Hello." not in said  # only the last two lines
    assert from_caller_lines([]) == (
        "A caller is being put through to you. They have not said why yet."
    )
