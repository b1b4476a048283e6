"""The merge gate: with merge_requires_passing_tests, a branch merges only when every test of
the agent passed in a finished run on the branch head's commit; else 409 naming the tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.agent_tests_support import CONFIG, add_test, finished, start_run
from tests.agents_support import commit, create_agent
from tests.factories import make_org
from tests.llm_stub import StubLLM


@pytest.fixture
def llm() -> Iterator[StubLLM]:
    with StubLLM(replies=["Sure, Monday works."]) as stub:
        yield stub


@pytest.fixture
async def app(make_app: Any, llm: StubLLM) -> Any:
    return await make_app(llm_base_url=llm.base_url, worker="embedded", worker_poll_seconds=0.05)


async def test_merging_waits_for_every_test_to_pass_on_the_source_head(app, client, llm):
    org = await make_org(app)
    agent = await create_agent(client, org, CONFIG)
    base = f"/v1/agents/{agent['id']}"
    assert agent["merge_requires_passing_tests"] is False
    gated = await client.patch(
        base, headers=org.headers, json={"merge_requires_passing_tests": True}
    )
    assert gated.status_code == 200, gated.text
    assert gated.json()["agent"]["merge_requires_passing_tests"] is True
    assert gated.json()["agent"]["name"] == "Riley"
    empty = await client.patch(base, headers=org.headers, json={})
    assert empty.status_code == 422 and "merge_requires_passing_tests" in empty.json()["error"]

    await client.post(f"{base}/branches", headers=org.headers, json={"name": "kinder"})
    made = await commit(
        client, org, agent["id"], branch="kinder", changes={"prompt": "Be very kind."}
    )
    await add_test(
        client,
        org,
        agent["id"],
        name="monday",
        turns=[{"user": "Monday?"}],
        expect={"said": "Monday"},
    )
    await add_test(
        client,
        org,
        agent["id"],
        name="tuesday",
        turns=[{"user": "Tuesday?"}],
        expect={"said": "Tuesday"},
    )

    async def merge() -> Any:
        return await client.post(
            f"{base}/branches/kinder/merge", headers=org.headers, json={"into": "main"}
        )

    refused = await merge()
    assert refused.status_code == 409
    assert refused.json()["errors"] == ["missing: monday", "missing: tuesday"]
    assert made["commit"]["id"] in refused.json()["error"]

    # A passing run on main does not count for the branch's head.
    await finished(client, org, agent["id"], (await start_run(client, org, agent["id"]))["id"])
    run = await start_run(client, org, agent["id"], ref="kinder", tests=["monday"])
    assert (await finished(client, org, agent["id"], run["id"]))["status"] == "passed"
    refused = await merge()
    assert refused.status_code == 409 and refused.json()["errors"] == ["missing: tuesday"]

    run = await start_run(client, org, agent["id"], ref="kinder")
    assert (await finished(client, org, agent["id"], run["id"]))["status"] == "failed"
    refused = await merge()
    assert refused.json()["errors"] == ["failing: tuesday"]

    await client.patch(
        f"{base}/tests/tuesday", headers=org.headers, json={"expect": {"said": "Monday"}}
    )
    run = await start_run(client, org, agent["id"], ref="kinder", tests=["tuesday"])
    assert (await finished(client, org, agent["id"], run["id"]))["status"] == "passed"
    merged = await merge()
    assert merged.status_code == 200, merged.text
    assert merged.json()["commit"]["id"] == made["commit"]["id"]  # a fast-forward


async def test_without_the_gate_merging_needs_no_runs(app, client):
    org = await make_org(app)
    agent = await create_agent(client, org, CONFIG)
    base = f"/v1/agents/{agent['id']}"
    await client.post(f"{base}/branches", headers=org.headers, json={"name": "b"})
    await commit(client, org, agent["id"], branch="b", changes={"prompt": "Other."})
    await add_test(client, org, agent["id"], name="t", turns=[{"user": "hi"}])
    merged = await client.post(f"{base}/branches/b/merge", headers=org.headers, json={})
    assert merged.status_code == 200, merged.text
