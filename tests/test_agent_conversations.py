"""POST /agents/{uuid}/conversations: a text-only turn of any branch or commit (docs/agents.md),
against the stub LLM (the one stand-in the tests allow)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.agents_support import commit, create_agent, head
from tests.factories import make_org
from tests.llm_stub import Reply, StubLLM


@pytest.fixture
def llm() -> Iterator[StubLLM]:
    with StubLLM(
        replies=[
            "Your appointment is at three. Goodbye for now!",
            Reply("Let me check.", tool="lookup_order", arguments={"id": 7}),
            Reply("Bye.", tool="end_call", arguments={"reason": "done"}),
        ]
    ) as stub:
        yield stub


@pytest.fixture
async def app(make_app: Any, llm: StubLLM) -> Any:
    return await make_app(llm_base_url=llm.base_url)


CONFIG = {
    "prompt": "You are Riley at {{clinic}}. The caller is {{name|a patient}}.",
    "first_message": "Hi {{name}}, this is {{clinic}}.",
    "variables": {"clinic": "Bright Smiles"},
    "end_call_phrases": ["goodbye for now"],
    "tools": [
        {
            "type": "function",
            "name": "lookup_order",
            "url": "https://example.com/orders",
            "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}},
        }
    ],
}


async def test_opening_line_renders_variables_without_the_llm(app, client, llm):
    org = await make_org(app)
    agent = await create_agent(client, org, CONFIG)
    response = await client.post(
        f"/v1/agents/{agent['id']}/conversations",
        headers=org.headers,
        json={"params": {"name": "Ada"}},
    )
    assert response.status_code == 200, response.text
    assert response.json() == {
        "commit_id": head(agent),
        "entries": [{"role": "assistant", "text": "Hi Ada, this is Bright Smiles."}],
        "ended": False,
    }
    assert llm.streamed_requests() == []


async def test_a_null_agent_speaks_first_opens_as_a_call_does(app, client, llm):
    # The config is read through the typed model, as a call reads it: null is "unset".
    org = await make_org(app)
    agent = await create_agent(client, org, {**CONFIG, "agent_speaks_first": None})
    response = await client.post(
        f"/v1/agents/{agent['id']}/conversations",
        headers=org.headers,
        json={"params": {"name": "Ada"}},
    )
    assert response.status_code == 200, response.text
    assert response.json()["entries"] == [
        {"role": "assistant", "text": "Hi Ada, this is Bright Smiles."}
    ]
    assert llm.streamed_requests() == []


async def test_a_turn_uses_the_rendered_prompt_and_end_call_phrases(app, client, llm):
    org = await make_org(app)
    agent = await create_agent(client, org, CONFIG)
    response = await client.post(
        f"/v1/agents/{agent['id']}/conversations",
        headers=org.headers,
        json={"messages": [{"role": "user", "text": "When is my appointment?"}]},
    )
    body = response.json()
    assert body["entries"] == [
        {"role": "assistant", "text": "Your appointment is at three. Goodbye for now!"}
    ]
    assert body["ended"] is True
    sent = llm.streamed_requests()[-1]
    assert (
        sent["messages"][0]["content"] == "You are Riley at Bright Smiles. The caller is a patient."
    )
    # The same definitions a call offers (one registry): the configured tools, then end_call.
    assert [t["function"]["name"] for t in sent["tools"]] == ["lookup_order", "end_call", "opt_out"]


async def test_tools_are_mocked_and_end_call_ends(app, client, llm):
    org = await make_org(app)
    agent = await create_agent(client, org, CONFIG)
    history = [
        {"role": "user", "text": "hi"},
        {"role": "assistant", "text": "hello"},
        {"role": "user", "text": "order 7?"},
    ]
    response = await client.post(
        f"/v1/agents/{agent['id']}/conversations",
        headers=org.headers,
        json={"messages": history},
    )
    entries = response.json()["entries"]
    assert entries[:3] == [
        {"role": "assistant", "text": "Let me check."},
        {"role": "assistant", "function_name": "lookup_order", "arguments": {"id": 7}, "text": ""},
        {"role": "tool", "function_name": "lookup_order", "text": '{"mocked":true}'},
    ]
    ended = await client.post(
        f"/v1/agents/{agent['id']}/conversations",
        headers=org.headers,
        json={
            "messages": [
                *history,
                {"role": "assistant", "text": "ok"},
                {"role": "user", "text": "bye"},
            ]
        },
    )
    assert ended.json()["ended"] is True
    assert ended.json()["entries"][-1]["function_name"] == "end_call"


async def test_a_branch_or_commit_is_tested_before_merging(app, client, llm):
    org = await make_org(app)
    agent = await create_agent(client, org, CONFIG)
    first = head(agent)
    await client.post(
        f"/v1/agents/{agent['id']}/branches", headers=org.headers, json={"name": "new-greeting"}
    )
    made = await commit(
        client,
        org,
        agent["id"],
        branch="new-greeting",
        changes={"first_message": "Hello from {{clinic}}!"},
    )
    on_branch = await client.post(
        f"/v1/agents/{agent['id']}/conversations", headers=org.headers, json={"ref": "new-greeting"}
    )
    assert on_branch.json()["commit_id"] == made["commit"]["id"]
    assert on_branch.json()["entries"][0]["text"] == "Hello from Bright Smiles!"
    on_commit = await client.post(
        f"/v1/agents/{agent['id']}/conversations", headers=org.headers, json={"ref": first}
    )
    assert on_commit.json()["entries"][0]["text"] == "Hi , this is Bright Smiles."
    unknown = await client.post(
        f"/v1/agents/{agent['id']}/conversations", headers=org.headers, json={"ref": "nope"}
    )
    assert unknown.status_code == 422 and unknown.json()["error"].startswith("ref")
    bad_role = await client.post(
        f"/v1/agents/{agent['id']}/conversations",
        headers=org.headers,
        json={"messages": [{"role": "system", "text": "x"}]},
    )
    assert bad_role.status_code == 422


@pytest.mark.parametrize(("busy", "status"), [(1, 200), (2, 503)], ids=["once", "twice"])
async def test_a_brain_busy_before_its_first_word_is_asked_once_more(
    app, client, llm, busy, status
):
    # As on a call: one 503 before any token is a blip, asked again; a second is the answer.
    llm.busy_first = busy
    org = await make_org(app)
    agent = await create_agent(client, org, CONFIG)
    response = await client.post(
        f"/v1/agents/{agent['id']}/conversations",
        headers=org.headers,
        json={"messages": [{"role": "user", "text": "When is my appointment?"}]},
    )
    assert response.status_code == status, response.text
    if status == 200:
        assert response.json()["entries"][0]["text"].startswith("Your appointment is at three")
    assert len(llm.streamed_requests()) == 2
