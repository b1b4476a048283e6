"""Bad input to the agents routes (issue 24): a clear 4xx in the STATUS shape, nothing
half-written, never a 500; another organization's agents are invisible."""

from __future__ import annotations

import uuid

import pytest

from tests.agents_support import commit, create_agent, head
from tests.factories import make_org

STATUS_KEYS = {"status", "success", "error", "errors"}


def _tools(count: int) -> list[dict[str, object]]:
    return [{"type": "send_dtmf", "name": f"t{n}"} for n in range(count)]


def _nested(depth: int) -> dict[str, object]:
    value: dict[str, object] = {"type": "string"}
    for _ in range(depth):
        value = {"type": "object", "properties": {"x": value}}
    return value


BAD_CONFIGS = [
    pytest.param({"prompt": "x" * 100_001}, "config/prompt", id="huge-prompt"),
    pytest.param({"tools": _tools(33)}, "config/tools", id="33-tools"),
    pytest.param({"prompt": "a\x00b"}, "prompt: must not contain NUL", id="nul-byte"),
    pytest.param({"colour": "red"}, "config/colour: unknown key", id="unknown-key"),
    pytest.param(
        {"tools": [{"type": "end_call"}, {"type": "send_dtmf"}, {"type": "function", "url": "x"}]},
        "config/tools/2/url",
        id="tool-url",
    ),
    pytest.param(
        {"tools": [{"type": "function", "url": "https://a.b/c", "parameters": {"type": 3}}]},
        "config/tools/0/parameters",
        id="bad-json-schema",
    ),
    pytest.param(
        {"tools": [{"type": "function", "url": "https://a.b/c", "parameters": _nested(40)}]},
        "",
        id="deep-nesting",
    ),
    pytest.param({"tools": [{"type": "teleport"}]}, "config/tools/0", id="unknown-tool-type"),
    pytest.param(
        {"tools": [{"type": "transfer_call", "destinations": []}]},
        "config/tools/0/destinations",
        id="no-destinations",
    ),
    pytest.param({"temperature": 2.5}, "config/temperature", id="temperature"),
    pytest.param({"max_duration_seconds": 5}, "config/max_duration_seconds", id="duration"),
    pytest.param({"voicemail": {"action": "shout"}}, "config/voicemail/action", id="voicemail"),
    pytest.param({"voice_id": str(uuid.uuid4())}, "config/voice_id", id="unknown-voice"),
    pytest.param({"variables": {"a": 1}}, "config/variables/a", id="variable-not-string"),
    pytest.param({"language": "not a tag"}, "config/language", id="language"),
]


@pytest.mark.parametrize(("config", "named"), BAD_CONFIGS)
async def test_bad_config_is_422_naming_the_path(app, client, config, named):
    org = await make_org(app)
    response = await client.post(
        "/v1/agents", headers=org.headers, json={"name": "A", "config": config}
    )
    assert response.status_code == 422, response.text
    body = response.json()
    assert set(body) == STATUS_KEYS and named in body["error"]
    listed = await client.get("/v1/agents", headers=org.headers)
    assert listed.json()["total_count"] == 0


async def test_merge_patch_removing_required_structure_is_422_and_nothing_changes(app, client):
    org = await make_org(app)
    agent = await create_agent(
        client,
        org,
        {
            "tools": [
                {"type": "transfer_call", "destinations": [{"name": "a", "number": "+14155550100"}]}
            ]
        },
    )
    response = await client.post(
        f"/v1/agents/{agent['id']}/commits",
        headers=org.headers,
        json={"changes": {"tools": [{"type": "transfer_call"}]}},
    )
    assert response.status_code == 422 and "changes/tools/0/destinations" in response.text
    bad = await client.post(
        f"/v1/agents/{agent['id']}/commits",
        headers=org.headers,
        json={"changes": {"voicemail": {"action": "leave_message"}}},
    )
    assert bad.status_code == 422 and "voicemail" in bad.json()["error"]
    history = (await client.get(f"/v1/agents/{agent['id']}/commits", headers=org.headers)).json()
    assert history["total_count"] == 1


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({}, id="none"),
        pytest.param({"config": {}, "changes": {}}, id="two"),
        pytest.param({"config": "text"}, id="config-not-object"),
        pytest.param({"config": {}, "branch": "nope"}, id="unknown-branch"),
        pytest.param({"config": {}, "expected_head": "not-a-uuid"}, id="bad-expected-head"),
        pytest.param({"revert_to": str(uuid.uuid4())}, id="revert-to-unknown"),
    ],
)
async def test_bad_commit_bodies_are_422(app, client, body):
    org = await make_org(app)
    agent = await create_agent(client, org)
    response = await client.post(
        f"/v1/agents/{agent['id']}/commits", headers=org.headers, json=body
    )
    assert response.status_code == 422, response.text
    assert set(response.json()) == STATUS_KEYS


@pytest.mark.parametrize(
    "name", ["a..b", "Main", "émoji", "-x", "a" * 64, "x.lock", str(uuid.uuid4()), "a/b", ""]
)
async def test_bad_branch_names_are_422(app, client, name):
    org = await make_org(app)
    agent = await create_agent(client, org)
    response = await client.post(
        f"/v1/agents/{agent['id']}/branches", headers=org.headers, json={"name": name}
    )
    assert response.status_code == 422, response.text
    assert set(response.json()) == STATUS_KEYS


async def test_revert_to_another_agents_or_organizations_commit_is_422(app, client):
    org, other = await make_org(app), await make_org(app, "Other")
    mine = await create_agent(client, org)
    second = await create_agent(client, org, {"prompt": "second"})
    theirs = await create_agent(client, other, {"prompt": "theirs"})
    for foreign in (head(second), head(theirs)):
        response = await client.post(
            f"/v1/agents/{mine['id']}/commits", headers=org.headers, json={"revert_to": foreign}
        )
        assert response.status_code == 422 and "revert_to" in response.json()["error"]
        moved = await client.patch(
            f"/v1/agents/{mine['id']}/branches/main", headers=org.headers, json={"head": foreign}
        )
        assert moved.status_code == 422
        branch = await client.post(
            f"/v1/agents/{mine['id']}/branches",
            headers=org.headers,
            json={"name": "x", "from": foreign},
        )
        assert branch.status_code == 422


async def test_another_organizations_agent_is_404_everywhere(app, client):
    org, other = await make_org(app), await make_org(app, "Other")
    theirs = await create_agent(client, other)
    aid, commit_id = theirs["id"], head(theirs)
    requests = [
        ("GET", f"/v1/agents/{aid}", None),
        ("PATCH", f"/v1/agents/{aid}", {"name": "x"}),
        ("DELETE", f"/v1/agents/{aid}", None),
        ("POST", f"/v1/agents/{aid}/tools_secret", None),
        ("POST", f"/v1/agents/{aid}/commits", {"config": {}}),
        ("GET", f"/v1/agents/{aid}/commits", None),
        ("GET", f"/v1/agents/{aid}/commits/{commit_id}", None),
        ("GET", f"/v1/agents/{aid}/diff?from=main&to=main", None),
        ("POST", f"/v1/agents/{aid}/branches", {"name": "x"}),
        ("PATCH", f"/v1/agents/{aid}/branches/main", {"head": commit_id}),
        ("POST", f"/v1/agents/{aid}/branches/main/merge", {"into": "main"}),
        ("DELETE", f"/v1/agents/{aid}/branches/main", None),
        ("POST", f"/v1/agents/{aid}/conversations", {}),
    ]
    for method, url, body in requests:
        response = await client.request(method, url, headers=org.headers, json=body)
        assert response.status_code == 404, (method, url, response.text)
        assert response.json()["error"] == "Agent not found"
    listed = await client.get("/v1/agents", headers=org.headers)
    assert listed.json()["agents"] == []
    still = await client.get(f"/v1/agents/{aid}", headers=other.headers)
    assert still.json()["agent"] == theirs


async def test_malformed_ids_and_bodies_are_422(app, client):
    org = await make_org(app)
    agent = await create_agent(client, org)
    for method, url, body in [
        ("GET", "/v1/agents/not-a-uuid", None),
        ("GET", f"/v1/agents/{agent['id']}/commits/xyz", None),
        ("POST", "/v1/agents", {"name": ""}),
        ("POST", "/v1/agents", {"name": "a", "config": {}, "extra": 1}),
        ("GET", "/v1/agents?page=0", None),
        ("GET", f"/v1/agents/{agent['id']}/diff?from=main", None),
    ]:
        response = await client.request(method, url, headers=org.headers, json=body)
        assert response.status_code == 422, (url, response.text)
        assert set(response.json()) == STATUS_KEYS
    raw = await client.post(
        "/v1/agents",
        headers={**org.headers, "Content-Type": "application/json"},
        content=b'{"name": ',
    )
    assert raw.status_code == 422 and set(raw.json()) == STATUS_KEYS


async def test_unknown_commit_and_branch_in_routes_are_404(app, client):
    org = await make_org(app)
    agent = await create_agent(client, org)
    aid = agent["id"]
    assert (
        await client.get(f"/v1/agents/{aid}/commits/{uuid.uuid4()}", headers=org.headers)
    ).status_code == 404
    assert (
        await client.post(f"/v1/agents/{aid}/branches/nope/merge", headers=org.headers, json={})
    ).status_code == 404
    into_unknown = await client.post(
        f"/v1/agents/{aid}/branches/main/merge", headers=org.headers, json={"into": "nope"}
    )
    assert into_unknown.status_code == 422
    await commit(client, org, aid, changes={"prompt": "y"})
