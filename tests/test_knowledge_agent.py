"""The agent reads its knowledge base (docs/knowledge.md): the ``knowledge_search`` tool the
brain calls, and ``knowledge.auto``, the caller's words looked up before the brain is asked —
over a text turn (``POST /agents/{uuid}/conversations``) and on a simulated call, with the stub
LLM as the brain."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from callplane.tools import knowledge
from callplane.tools.toolbox import RESULT_CHARS
from tests import knowledge_corpus as corpus
from tests.agents_support import create_agent
from tests.conftest import client_for
from tests.engine_support import create_call, engine_app, events_of, wait_for_call
from tests.factories import OrgHandle, make_org
from tests.llm_stub import Reply, StubLLM


async def _knowledge_base(client, org: OrgHandle) -> str:
    response = await client.post("/v1/knowledge_bases", json={"name": "Shop"}, headers=org.headers)
    base = response.json()["knowledge_base"]["id"]
    response = await client.post(
        f"/v1/knowledge_bases/{base}/documents",
        content=corpus.RETURNS,
        headers={**org.headers, "content-type": "text/markdown"},
    )
    assert response.status_code == 201, response.text
    return base


@pytest.fixture
def llm() -> Iterator[StubLLM]:
    with StubLLM(
        replies=[
            Reply(
                "Let me look that up.",
                tool="knowledge_search",
                arguments={"query": "return worn shoes"},
            )
        ],
        after_tool=["Worn shoes cannot be returned, but they can be repaired."],
    ) as stub:
        yield stub


@pytest.fixture
async def app(make_app: Any, llm: StubLLM) -> Any:
    return await make_app(llm_base_url=llm.base_url)


def _found(entry: dict[str, Any]) -> list[str]:
    return [r["title"] for r in json.loads(entry["text"])["results"]]


async def _turn(client, org, agent, text: str, tools: str = "run") -> dict[str, Any]:
    response = await client.post(
        f"/v1/agents/{agent['id']}/conversations",
        headers=org.headers,
        json={"messages": [{"role": "user", "text": text}], "tools": tools},
    )
    assert response.status_code == 200, response.text
    return response.json()


async def test_the_brain_searches_with_the_knowledge_search_tool(app, client, llm):
    org = await make_org(app)
    base = await _knowledge_base(client, org)
    agent = await create_agent(
        client,
        org,
        {"tools": [{"type": "knowledge_search", "knowledge_base_id": base, "top_k": 2}]},
    )
    body = await _turn(client, org, agent, "Can I bring back shoes I wore?")
    said, called, answered, after = body["entries"]
    assert said == {"role": "assistant", "text": "Let me look that up."}
    assert called["function_name"] == "knowledge_search"
    assert called["arguments"] == {"query": "return worn shoes"}
    assert answered["role"] == "tool" and len(answered["text"]) <= RESULT_CHARS
    titles = _found(answered)
    assert titles[0] == "Returns policy › Shoes" and len(titles) <= 2
    assert after["text"].startswith("Worn shoes cannot be returned")
    offered = llm.streamed_requests()[0]["tools"]
    assert "knowledge_search" in [t["function"]["name"] for t in offered]
    tool_message = next(m for m in llm.streamed_requests()[-1]["messages"] if m["role"] == "tool")
    assert "repaired under the warranty" in tool_message["content"]


async def test_auto_looks_the_callers_words_up_before_the_brain_is_asked(app, client, llm):
    org = await make_org(app)
    base = await _knowledge_base(client, org)
    agent = await create_agent(
        client, org, {"knowledge": {"knowledge_base_id": base, "auto": True}}
    )
    body = await _turn(client, org, agent, "Do you refund headphones?", tools="mock")
    called, answered = body["entries"][:2]
    assert called == {
        "role": "assistant",
        "function_name": "knowledge_search",
        "arguments": {"query": "Do you refund headphones?"},
        "text": "",
    }
    assert _found(answered)[0] == "Returns policy › Electronics"
    budget = knowledge.AUTO_TOKEN_BUDGET * knowledge.CHARS_PER_TOKEN
    assert len(answered["text"]) <= budget
    # The brain was asked once, with what was found already in its context.
    [request] = llm.streamed_requests()
    assert request["messages"][-1]["role"] == "tool"
    assert "fourteen days" in request["messages"][-1]["content"]
    # Nothing found: nothing added, the brain asked as without knowledge (its own first line).
    quiet = await _turn(client, org, agent, "Hello there?", tools="mock")
    assert quiet["entries"][0] == {"role": "assistant", "text": "Let me look that up."}
    assert llm.streamed_requests()[1]["messages"][-1] == {
        "role": "user",
        "content": "Hello there?",
    }


async def test_a_config_naming_a_knowledge_base_that_is_not_the_organizations_is_422(app, client):
    owner, other = await make_org(app, "Owner"), await make_org(app, "Other")
    base = await _knowledge_base(client, owner)
    configs = {
        "config/knowledge/knowledge_base_id": {"knowledge": {"knowledge_base_id": base}},
        "config/tools/0/knowledge_base_id": {
            "tools": [{"type": "knowledge_search", "knowledge_base_id": base}]
        },
    }
    for path, config in configs.items():
        response = await client.post(
            "/v1/agents", headers=other.headers, json={"name": "x", "config": config}
        )
        assert response.status_code == 422, response.text
        assert response.json()["error"] == f"{path}: no such knowledge base"
    for config, path in (
        ({"knowledge": {"knowledge_base_id": "nope"}}, "config/knowledge/knowledge_base_id"),
        ({"knowledge": {"auto": True}}, "config/knowledge/knowledge_base_id"),
        ({"knowledge": {"knowledge_base_id": base, "x": 1}}, "config/knowledge/x"),
        (
            {"tools": [{"type": "knowledge_search", "knowledge_base_id": base, "top_k": 21}]},
            "config/tools/0/top_k",
        ),
    ):
        response = await client.post(
            "/v1/agents", headers=owner.headers, json={"name": "x", "config": config}
        )
        assert response.status_code == 422, config
        assert response.json()["error"].startswith(path), response.json()


async def test_a_deleted_knowledge_base_is_a_tool_error_the_brain_reads(app, client, llm):
    org = await make_org(app)
    base = await _knowledge_base(client, org)
    agent = await create_agent(
        client, org, {"tools": [{"type": "knowledge_search", "knowledge_base_id": base}]}
    )
    await client.delete(f"/v1/knowledge_bases/{base}", headers=org.headers)
    body = await _turn(client, org, agent, "Can I return shoes?")
    answered = next(e for e in body["entries"] if e["role"] == "tool")
    assert json.loads(answered["text"]) == {
        "error": "the agent's knowledge base does not exist (any more)"
    }


async def test_auto_on_a_simulated_call_feeds_the_brain_and_writes_an_event(make_app):
    script = ["Can I return shoes that I have worn?", "No, that's all."]
    with StubLLM(
        replies=["Sure.", Reply("Goodbye!", "end_call", {"reason": "done"})],
        after_tool=[
            "Worn shoes can be repaired, not returned.",
            Reply("Goodbye!", "end_call", {"reason": "done"}),
        ],
    ) as brain:
        app = await engine_app(
            make_app,
            simulated_call_seconds=20,
            simulated_script=script,
            llm_base_url=brain.base_url,
            llm_timeout_seconds=5,
        )
        org = await make_org(app)
        async with client_for(app) as client:
            base = await _knowledge_base(client, org)
            agent = await create_agent(
                client,
                org,
                {
                    "first_message": "Hi, this is the shop.",
                    "knowledge": {"knowledge_base_id": base, "auto": True},
                },
            )
            call_id = await create_call(client, org, "+14155550123", agent_id=agent["id"])
            call = await wait_for_call(client, org, call_id)
            events = await events_of(client, org, call_id)
        requests = brain.streamed_requests()
    transcript = call["transcripts"]
    searches = [e for e in transcript if e.get("function_name") == "knowledge_search"]
    assert searches, transcript
    called, answered = searches[0], searches[1]
    assert called["role"] == "assistant" and "worn" in called["arguments"]["query"]
    assert answered["role"] == "tool" and _found(answered)[0] == "Returns policy › Shoes"
    found = [e for e in events if e["type"] == "agent.knowledge"]
    assert found and found[0]["data"]["results"][0]["title"] == "Returns policy › Shoes"
    assert found[0]["data"]["query"] == called["arguments"]["query"]
    assert found[0]["data"]["duration_ms"] >= 0
    told = [m["content"] for r in requests for m in r["messages"] if m["role"] == "tool"]
    assert any("repaired under the warranty" in text for text in told)


def test_what_the_brain_reads_is_whole_json_within_its_budget():
    import uuid

    from callplane.knowledge.search import Hit

    text = 'He said "no" \\ twice. ' * 60  # quotes and backslashes cost two characters each
    hits = [Hit(uuid.uuid4(), f"Doc {n} › Part", text, 1.0 / (n + 1)) for n in range(5)]
    for budget in (300, 1_600, knowledge.RESULT_BUDGET):
        shown = json.dumps(knowledge.found(hits, budget), ensure_ascii=False, separators=(",", ":"))
        assert len(shown) <= budget
        results = json.loads(shown)["results"]
        assert results and results[0]["title"] == "Doc 0 › Part"
        assert all(r["text"] == text for r in results[:-1]) and results[-1]["text"].endswith("…")
    assert knowledge.RESULT_BUDGET <= RESULT_CHARS
