"""POST /agents/{uuid}/conversations with ``tools: "run"`` (docs/tools.md): the commit's tools run
as on a call — a real local receiver verifies the function tool's signature, the organization's
own tables and contact data are read — and a tool that needs a phone line, or that hangs,
answers an error result, never a 500. The stub LLM is the only stand-in."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from standardwebhooks.webhooks import Webhook

from tests.conftest import client_for
from tests.factories import OrgHandle, make_org
from tests.llm_stub import Reply, StubLLM
from tests.webhook_receiver import Reply as HookReply
from tests.webhook_receiver import receiver

ORDER = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}


@pytest.fixture
def llm() -> Iterator[StubLLM]:
    # The reply is chosen by the number of user lines in the conversation (one, two, three).
    with StubLLM(
        replies=[
            Reply("Let me check.", "lookup_order", {"id": 7}),
            Reply(
                "",
                "contact_data",
                {},
                more_tools=(
                    ("find", {"filters": [{"column": "item", "op": "eq", "value": "pen"}]}),
                    ("theirs", {}),
                    ("transfer_call", {"destination": "sales"}),
                    ("send_dtmf", {"digits": "1#"}),
                    ("lookup_order", {"id": "not a number"}),
                ),
            ),
            Reply("Bye.", "end_call", {"reason": "done"}),
        ],
        after_tool=["Your order has shipped."],
    ) as stub:
        yield stub


@pytest.fixture
async def app(make_app: Any, llm: StubLLM) -> Any:
    return await make_app(llm_base_url=llm.base_url, webhook_allow_private_networks=True)


def config(url: str, timeout_seconds: int = 5) -> dict[str, Any]:
    return {
        "prompt": "You are Riley.",
        "tools": [
            {
                "type": "function",
                "name": "lookup_order",
                "url": url,
                "parameters": ORDER,
                "timeout_seconds": timeout_seconds,
            },
            {"type": "contact_data"},
            {"type": "query_table", "name": "find", "table": "orders", "columns": ["item"]},
            {"type": "query_table", "name": "theirs", "table": "secret_orders"},
            {
                "type": "transfer_call",
                "destinations": [{"name": "sales", "number": "+14155550100"}],
            },
            {"type": "send_dtmf"},
        ],
    }


async def new_agent(client: Any, org: OrgHandle, body: dict[str, Any]) -> tuple[str, str, str]:
    """The agent's id, its head commit and its tools secret."""
    made = await client.post(
        "/v1/agents", headers=org.headers, json={"name": "Riley", "config": body}
    )
    assert made.status_code == 201, made.text
    agent = made.json()["agent"]
    return agent["id"], str(agent["branches"][0]["head"]), made.json()["tools_secret"]


def said(*lines: str) -> list[dict[str, str]]:
    """A conversation whose user said ``lines`` (the agent answering "ok" in between)."""
    messages: list[dict[str, str]] = []
    for line in lines:
        if messages:
            messages.append({"role": "assistant", "text": "ok"})
        messages.append({"role": "user", "text": line})
    return messages


async def turn(client: Any, org: OrgHandle, agent_id: str, **body: Any) -> dict[str, Any]:
    response = await client.post(
        f"/v1/agents/{agent_id}/conversations", headers=org.headers, json={"tools": "run", **body}
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def answers(entries: list[dict[str, Any]]) -> dict[str, str]:
    return {e["function_name"]: e["text"] for e in entries if e["role"] == "tool"}


async def test_a_function_tool_is_a_signed_post_to_the_receiver(app, client, llm):
    org = await make_org(app)
    shipped = orjson.dumps({"status": "shipped"})
    async with receiver(
        lambda _n: HookReply(headers={"content-type": "application/json"}, body=shipped)
    ) as endpoint:
        agent_id, commit_id, secret = await new_agent(client, org, config(endpoint.url))
        result = await turn(
            client, org, agent_id, messages=said("Where is order 7?"), params={"plan": "gold"}
        )
    [request] = endpoint.received
    payload = Webhook(secret).verify(request.body, request.headers)
    assert payload["type"] == "tool.call" and payload["tool"] == "lookup_order"
    assert payload["arguments"] == {"id": 7}
    assert payload["call"] == {
        "id": None,
        "direction": None,
        "from_number": None,
        "to_number": None,
        "params": {"plan": "gold"},
        "external_identifiers": {},
        "agent_id": agent_id,
        "agent_commit_id": commit_id,
    }
    assert result == {
        "commit_id": commit_id,
        "entries": [
            {"role": "assistant", "text": "Let me check."},
            {
                "role": "assistant",
                "function_name": "lookup_order",
                "arguments": {"id": 7},
                "text": "",
            },
            {"role": "tool", "function_name": "lookup_order", "text": '{"status":"shipped"}'},
            {"role": "assistant", "text": "Your order has shipped."},
        ],
        "ended": False,
    }
    # The brain read the receiver's answer back.
    last = llm.streamed_requests()[-1]["messages"]
    assert [m["content"] for m in last if m["role"] == "tool"] == ['{"status":"shipped"}']


async def test_tables_contact_data_and_phone_tools_in_a_text_conversation(app, client, llm):
    mine, theirs = await make_org(app, "Mine"), await make_org(app, "Theirs")
    table = {
        "columns": [{"name": "item", "type": "TEXT"}, {"name": "qty", "type": "INTEGER"}],
    }
    for org, name in ((mine, "orders"), (theirs, "orders"), (theirs, "secret_orders")):
        made = await client.post(
            "/v1/data/tables", json={**table, "name": name}, headers=org.headers
        )
        assert made.status_code == 201, made.text
    for org, qty in ((mine, 1), (theirs, 99)):
        added = await client.post(
            "/v1/data/orders", json={"records": [{"item": "pen", "qty": qty}]}, headers=org.headers
        )
        assert added.status_code == 201, added.text
    put = await client.put(
        "/v1/contacts/%2B14155550152/data", json={"data": {"name": "Dana"}}, headers=mine.headers
    )
    assert put.status_code == 200, put.text
    async with receiver() as endpoint:
        agent_id, _commit, _secret = await new_agent(client, mine, config(endpoint.url))
        messages = said("Hello", "What do I have?")
        known = await turn(client, mine, agent_id, messages=messages, contact="+14155550152")
        unknown = await turn(client, mine, agent_id, messages=messages)
        ended = await turn(client, mine, agent_id, messages=said("a", "b", "bye"))
    assert endpoint.received == []  # arguments that break the schema never leave the server
    got = answers(known["entries"])
    assert orjson.loads(got["contact_data"]) == {"data": {"name": "Dana"}}
    found = orjson.loads(got["find"])
    assert found["total_count"] == 1
    assert [r["item"] for r in found["records"]] == ["pen"]
    assert all(set(r) <= {"id", "item"} for r in found["records"])  # qty is not shown
    assert "not found" in orjson.loads(got["theirs"])["error"].lower()
    assert "99" not in got["theirs"]
    for name in ("transfer_call", "send_dtmf"):
        error = orjson.loads(got[name])["error"]
        assert "not available in a text conversation" in error, error
    assert "invalid arguments" in orjson.loads(got["lookup_order"])["error"]
    assert known["ended"] is False
    # Without a contact there is no other party whose data to read.
    assert "error" in orjson.loads(answers(unknown["entries"])["contact_data"])
    assert ended["ended"] is True
    assert answers(ended["entries"]) == {"end_call": '{"ended":true}'}


async def test_a_writable_contact_data_tool_writes_only_the_given_contact(app, client, llm):
    org = await make_org(app)
    tools = {"tools": [{"type": "contact_data", "writable": True}]}
    agent_id, _commit, _secret = await new_agent(client, org, tools)
    stub_reply = Reply("", "contact_data", {"set": {"plan": "gold"}})
    llm.replies[0] = stub_reply
    written = await turn(client, org, agent_id, messages=said("hi"), contact="+14155550153")
    nobody = await turn(client, org, agent_id, messages=said("hi"))
    assert orjson.loads(answers(written["entries"])["contact_data"]) == {"data": {"plan": "gold"}}
    assert "error" in orjson.loads(answers(nobody["entries"])["contact_data"])
    stored = await client.get("/v1/contacts/%2B14155550153/data", headers=org.headers)
    assert stored.status_code == 200 and stored.json()["data"] == {"plan": "gold"}


async def test_a_receiver_that_hangs_or_is_off_limits_gives_an_error_result(
    app, client, llm, make_app
):
    org = await make_org(app)
    async with receiver(lambda _n: HookReply(delay=8)) as endpoint:
        agent_id, _commit, _secret = await new_agent(client, org, config(endpoint.url, 1))
        hung = await turn(client, org, agent_id, messages=said("Where is order 7?"))
        # An app holding webhooks' network rule: the loopback receiver is refused.
        guarded = await make_app(llm_base_url=llm.base_url)
        async with client_for(guarded) as other:
            refused = await turn(other, org, agent_id, messages=said("Where is order 7?"))
    assert orjson.loads(answers(hung["entries"])["lookup_order"]) == {
        "error": "no result within 1 s"
    }
    assert orjson.loads(answers(refused["entries"])["lookup_order"]) == {
        "error": "the endpoint's address is not allowed"
    }
    assert len(endpoint.received) == 1
