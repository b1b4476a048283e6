"""Agents, commits and branches over HTTP (docs/agents.md)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime
from typing import Any

from tests.agents_support import commit, create_agent, head
from tests.factories import make_org

STATUS_KEYS = {"status", "success", "error", "errors"}


def _updated(agent: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(agent["updated_at"])


async def test_create_get_list_rename_archive(app, client):
    org = await make_org(app)
    response = await client.post(
        "/v1/agents",
        headers=org.headers,
        json={"name": "Riley", "config": {"prompt": "Hi {{name}}"}, "message": "first"},
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["tools_secret"].startswith("whsec_")
    agent = body["agent"]
    assert set(agent) == {
        "id",
        "name",
        "default_branch",
        "branches",
        "config",
        "merge_requires_passing_tests",
        "created_at",
        "updated_at",
    }
    assert agent["default_branch"] == "main" and agent["config"] == {"prompt": "Hi {{name}}"}
    assert [b["name"] for b in agent["branches"]] == ["main"]
    got = await client.get(f"/v1/agents/{agent['id']}", headers=org.headers)
    assert got.json()["agent"] == agent
    await create_agent(client, org, name="Alex")
    listed = (await client.get("/v1/agents", headers=org.headers)).json()
    assert [a["name"] for a in listed["agents"]] == ["Alex", "Riley"]
    assert listed["total_count"] == 2 and listed["total_pages"] == 1
    renamed = await client.patch(
        f"/v1/agents/{agent['id']}", headers=org.headers, json={"name": "Riley 2"}
    )
    assert renamed.json()["agent"]["name"] == "Riley 2"
    history = (await client.get(f"/v1/agents/{agent['id']}/commits", headers=org.headers)).json()
    assert history["total_count"] == 1 and history["commits"][0]["message"] == "first"
    assert history["commits"][0]["author"] == f"api_key:{org.key_id}"
    assert "config" not in history["commits"][0]
    deleted = await client.delete(f"/v1/agents/{agent['id']}", headers=org.headers)
    assert deleted.json() == {"success": True}
    gone = await client.get(f"/v1/agents/{agent['id']}", headers=org.headers)
    assert gone.status_code == 404 and set(gone.json()) == STATUS_KEYS
    listed = (await client.get("/v1/agents", headers=org.headers)).json()
    assert [a["name"] for a in listed["agents"]] == ["Alex"]


async def test_commit_config_changes_revert_and_same_config(app, client):
    org = await make_org(app)
    agent = await create_agent(client, org, {"prompt": "A", "variables": {"x": "1"}})
    first = head(agent)
    made = await commit(client, org, agent["id"], config={"prompt": "B"}, message="whole")
    assert made["commit"]["parents"] == [first] and made["commit"]["branch"] == "main"
    patched = await commit(
        client, org, agent["id"], changes={"first_message": "Hello", "prompt": None}
    )
    assert patched["commit"]["config"] == {"first_message": "Hello"}
    # The agent shows main's head: a commit updates it; a commit that changes nothing does not.
    touched = (await client.get(f"/v1/agents/{agent['id']}", headers=org.headers)).json()["agent"]
    assert _updated(touched) > _updated(agent)
    same = await commit(client, org, agent["id"], expect=200, config={"first_message": "Hello"})
    assert same["commit"]["id"] == patched["commit"]["id"]
    still = (await client.get(f"/v1/agents/{agent['id']}", headers=org.headers)).json()["agent"]
    assert _updated(still) == _updated(touched)
    reverted = await commit(client, org, agent["id"], revert_to=first)
    assert reverted["commit"]["config"] == {"prompt": "A", "variables": {"x": "1"}}
    got = await client.get(f"/v1/agents/{agent['id']}", headers=org.headers)
    assert got.json()["agent"]["config"] == reverted["commit"]["config"]
    one = await client.get(
        f"/v1/agents/{agent['id']}/commits/{made['commit']['id']}", headers=org.headers
    )
    assert one.json()["commit"]["config"] == {"prompt": "B"}
    history = (await client.get(f"/v1/agents/{agent['id']}/commits", headers=org.headers)).json()
    assert history["total_count"] == 4
    assert history["commits"][0]["id"] == reverted["commit"]["id"]


async def test_expected_head_mismatch_is_409_and_nothing_changes(app, client):
    org = await make_org(app)
    agent = await create_agent(client, org)
    response = await client.post(
        f"/v1/agents/{agent['id']}/commits",
        headers=org.headers,
        json={"config": {"prompt": "new"}, "expected_head": str(uuid.uuid4())},
    )
    assert response.status_code == 409 and set(response.json()) == STATUS_KEYS
    history = (await client.get(f"/v1/agents/{agent['id']}/commits", headers=org.headers)).json()
    assert history["total_count"] == 1


async def test_forty_concurrent_commits_one_wins(app, client):
    """Real concurrent requests, each in its own unit of work on its own connection: the head
    moves once; the 39 others are 409 and leave no commit behind."""
    org = await make_org(app)
    agent = await create_agent(client, org)
    expected = head(agent)
    responses = await asyncio.gather(
        *(
            client.post(
                f"/v1/agents/{agent['id']}/commits",
                headers=org.headers,
                json={"config": {"prompt": f"v{n}"}, "expected_head": expected},
            )
            for n in range(40)
        )
    )
    codes = sorted(r.status_code for r in responses)
    assert codes == [201] + [409] * 39, [r.text for r in responses if r.status_code >= 500]
    history = (await client.get(f"/v1/agents/{agent['id']}/commits", headers=org.headers)).json()
    assert history["total_count"] == 2
    winner = next(r for r in responses if r.status_code == 201).json()["commit"]
    got = (await client.get(f"/v1/agents/{agent['id']}", headers=org.headers)).json()
    assert head(got["agent"]) == winner["id"]


async def test_diff_by_json_pointer_tools_by_name(app, client):
    org = await make_org(app)
    tools = [
        {"type": "function", "name": "lookup_order", "url": "https://a.example/x"},
        {"type": "end_call"},
    ]
    agent = await create_agent(client, org, {"prompt": "A", "tools": tools, "keyterms": ["a"]})
    first = head(agent)
    changed = [
        {"type": "end_call"},
        {"type": "function", "name": "lookup_order", "url": "https://a.example/y"},
    ]
    made = await commit(
        client,
        org,
        agent["id"],
        config={"tools": changed, "keyterms": ["a", "b"], "first_message": "Hi"},
    )
    response = await client.get(
        f"/v1/agents/{agent['id']}/diff",
        headers=org.headers,
        params={"from": first, "to": "main"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["changes"] == [
        {"path": "/first_message", "to": "Hi"},
        {"path": "/keyterms", "from": ["a"], "to": ["a", "b"]},
        {"path": "/prompt", "from": "A"},
        {
            "path": "/tools/lookup_order/url",
            "from": "https://a.example/x",
            "to": "https://a.example/y",
        },
    ]
    same = await client.get(
        f"/v1/agents/{agent['id']}/diff",
        headers=org.headers,
        params={"from": made["commit"]["id"], "to": "main"},
    )
    assert same.json() == {"changes": []}
    unknown = await client.get(
        f"/v1/agents/{agent['id']}/diff",
        headers=org.headers,
        params={"from": "nope", "to": str(uuid.uuid4())},
    )
    assert unknown.status_code == 422 and "from" in unknown.json()["error"]


async def test_branches_fast_forward_three_way_merge_and_conflicts(app, client):
    org = await make_org(app)
    agent = await create_agent(client, org, {"prompt": "A", "first_message": "Hi"})
    aid = agent["id"]
    made = await client.post(
        f"/v1/agents/{aid}/branches", headers=org.headers, json={"name": "feature"}
    )
    assert made.status_code == 201, made.text
    assert made.json()["branch"]["head"] == head(agent)
    dup = await client.post(
        f"/v1/agents/{aid}/branches", headers=org.headers, json={"name": "feature"}
    )
    assert dup.status_code == 409
    branched = (await client.get(f"/v1/agents/{aid}", headers=org.headers)).json()["agent"]
    assert _updated(branched) > _updated(agent)  # a new branch in its list
    await commit(client, org, aid, branch="feature", changes={"prompt": "B"})
    committed = (await client.get(f"/v1/agents/{aid}", headers=org.headers)).json()["agent"]
    assert _updated(committed) > _updated(branched)  # a branch's head moved
    ff = await client.post(f"/v1/agents/{aid}/branches/feature/merge", headers=org.headers, json={})
    assert ff.status_code == 200, ff.text
    merged_ff = (await client.get(f"/v1/agents/{aid}", headers=org.headers)).json()["agent"]
    assert _updated(merged_ff) > _updated(committed)
    assert ff.json()["commit"]["config"]["prompt"] == "B"
    assert len(ff.json()["commit"]["parents"]) == 1
    again = await client.post(
        f"/v1/agents/{aid}/branches/feature/merge", headers=org.headers, json={}
    )
    assert again.json()["commit"]["id"] == ff.json()["commit"]["id"]
    # diverge: different paths merge; the same path changed differently conflicts
    await commit(client, org, aid, branch="feature", changes={"first_message": "Hello"})
    await commit(client, org, aid, branch="main", changes={"language": "de"})
    merged = await client.post(
        f"/v1/agents/{aid}/branches/feature/merge", headers=org.headers, json={"into": "main"}
    )
    assert merged.status_code == 200, merged.text
    commit_out = merged.json()["commit"]
    assert len(commit_out["parents"]) == 2
    assert commit_out["config"] == {"prompt": "B", "first_message": "Hello", "language": "de"}
    await commit(client, org, aid, branch="feature", changes={"prompt": "from feature"})
    await commit(client, org, aid, branch="main", changes={"prompt": "from main"})
    before = (await client.get(f"/v1/agents/{aid}", headers=org.headers)).json()["agent"]
    conflict = await client.post(
        f"/v1/agents/{aid}/branches/feature/merge", headers=org.headers, json={}
    )
    assert conflict.status_code == 409
    assert conflict.json()["errors"] == ["conflict: /prompt"]
    after = (await client.get(f"/v1/agents/{aid}", headers=org.headers)).json()["agent"]
    assert after == before
    itself = await client.post(
        f"/v1/agents/{aid}/branches/main/merge", headers=org.headers, json={"into": "main"}
    )
    assert itself.status_code == 422
    reachable = (
        await client.get(
            f"/v1/agents/{aid}/commits", headers=org.headers, params={"branch": "feature"}
        )
    ).json()
    assert reachable["total_count"] == 4


async def test_rollback_by_moving_a_branch_and_delete_rules(app, client):
    org = await make_org(app)
    agent = await create_agent(client, org)
    aid, first = agent["id"], head(agent)
    await commit(client, org, aid, changes={"prompt": "broken"})
    rolled = await client.patch(
        f"/v1/agents/{aid}/branches/main", headers=org.headers, json={"head": first}
    )
    assert rolled.status_code == 200 and rolled.json()["branch"]["head"] == first
    main_delete = await client.delete(f"/v1/agents/{aid}/branches/main", headers=org.headers)
    assert main_delete.status_code == 409
    await client.post(f"/v1/agents/{aid}/branches", headers=org.headers, json={"name": "x"})
    ok = await client.delete(f"/v1/agents/{aid}/branches/x", headers=org.headers)
    assert ok.json() == {"success": True}
    missing = await client.delete(f"/v1/agents/{aid}/branches/x", headers=org.headers)
    assert missing.status_code == 404


async def test_tools_secret_rotation(app, client):
    org = await make_org(app)
    created = await client.post("/v1/agents", headers=org.headers, json={"name": "A", "config": {}})
    old = created.json()["tools_secret"]
    rotated = await client.post(
        f"/v1/agents/{created.json()['agent']['id']}/tools_secret", headers=org.headers
    )
    assert rotated.status_code == 201
    assert rotated.json()["tools_secret"].startswith("whsec_")
    assert rotated.json()["tools_secret"] != old
