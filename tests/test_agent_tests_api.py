"""Agent tests stored per agent: create, list, get, change, delete; every bad value a 422 that
names its JSON path, in agents' error shape."""

from __future__ import annotations

from typing import Any

from tests.agent_tests_support import CONFIG, add_test
from tests.agents_support import commit, create_agent
from tests.factories import make_org

STATUS_KEYS = {"status", "success", "error", "errors"}

GOOD: dict[str, Any] = {
    "name": "books a cleaning",
    "turns": [{"user": "I need a cleaning on Monday"}],
    "mocks": {"book": {"confirmed": True}},
    "expect": {"tool_calls": [{"name": "book", "arguments": {"day": "Monday"}}], "said": "book"},
}


async def test_a_test_is_created_listed_changed_and_deleted(app, client):
    org = await make_org(app)
    agent = await create_agent(client, org, CONFIG)
    base = f"/v1/agents/{agent['id']}/tests"
    created = (await add_test(client, org, agent["id"], **GOOD))["test"]
    assert created["name"] == "books a cleaning"
    assert created["turns"] == [{"user": "I need a cleaning on Monday"}]
    assert created["expect"]["said"] == ["book"]  # one pattern is a list of one
    assert (created["repeat"], created["pass_rate"], created["judge"]) == (1, 1.0, [])
    assert "caller" not in created

    again = await client.post(base, headers=org.headers, json=GOOD)
    assert again.status_code == 409 and set(again.json()) == STATUS_KEYS

    listed = (await client.get(base, headers=org.headers)).json()["tests"]
    assert [t["name"] for t in listed] == ["books a cleaning"]
    one = await client.get(f"{base}/books a cleaning", headers=org.headers)
    assert one.json()["test"] == created

    persona = {"persona": "a busy parent", "goal": "book Monday", "max_turns": 4}
    changed = await client.patch(
        f"{base}/books a cleaning", headers=org.headers, json={"caller": persona, "repeat": 3}
    )
    assert changed.status_code == 200, changed.text
    test = changed.json()["test"]
    assert test["caller"] == persona and "turns" not in test and test["repeat"] == 3
    assert test["mocks"] == GOOD["mocks"]  # untouched keys stay

    renamed = await client.patch(
        f"{base}/books a cleaning", headers=org.headers, json={"name": "books"}
    )
    assert renamed.json()["test"]["name"] == "books"
    assert (await client.delete(f"{base}/books", headers=org.headers)).json() == {"success": True}
    gone = await client.get(f"{base}/books", headers=org.headers)
    assert gone.status_code == 404 and gone.json()["error"] == "Test not found"


async def test_bad_values_name_their_json_path(app, client):
    org = await make_org(app)
    agent = await create_agent(client, org, CONFIG)
    cases = [
        ({**GOOD, "expect": {"said": ["ok", "(unclosed"]}}, "expect.said.1"),
        ({**GOOD, "expect": {"not_said": "["}}, "expect.not_said.0"),
        ({**GOOD, "repeat": 21}, "repeat"),
        ({**GOOD, "pass_rate": 1.5}, "pass_rate"),
        ({**GOOD, "caller": {"persona": "p", "goal": "g"}}, "either turns or caller"),
        ({"name": "x"}, "either turns or caller"),
        (
            {**GOOD, "caller": {"persona": "p", "goal": "g", "max_turns": 31}, "turns": None},
            "caller.max_turns",
        ),
        ({**GOOD, "turns": [{"user": ""}]}, "turns.0.user"),
        ({**GOOD, "expect": {"tool_calls": [{"arguments": {}}]}}, "expect.tool_calls.0.name"),
        ({**GOOD, "expect": {"surely": True}}, "expect.surely"),
        ({**GOOD, "mocks": {"book": 1, "refund": {"ok": True}}}, "mocks.refund"),
        ({**GOOD, "name": "a/b"}, "name"),
    ]
    for body, named in cases:
        response = await client.post(
            f"/v1/agents/{agent['id']}/tests", headers=org.headers, json=body
        )
        assert response.status_code == 422, (body, response.text)
        assert set(response.json()) == STATUS_KEYS
        assert named in response.json()["error"], (named, response.json())
    refund = await client.post(
        f"/v1/agents/{agent['id']}/tests",
        headers=org.headers,
        json={**GOOD, "mocks": {"refund": {}}},
    )
    assert refund.json()["error"] == "mocks.refund: the agent has no tool refund"

    # The same rules on PATCH, against the whole test it would make.
    await add_test(client, org, agent["id"], **GOOD)
    bad = await client.patch(
        f"/v1/agents/{agent['id']}/tests/books a cleaning",
        headers=org.headers,
        json={"expect": {"said": "(("}},
    )
    assert bad.status_code == 422 and "expect.said.0" in bad.json()["error"]
    malformed = await client.post(
        f"/v1/agents/{agent['id']}/tests",
        headers={**org.headers, "content-type": "application/json"},
        content=b"{nope",
    )
    assert malformed.status_code == 422 and set(malformed.json()) == STATUS_KEYS


async def test_a_mock_may_name_a_tool_of_any_branch(app, client):
    org = await make_org(app)
    agent = await create_agent(client, org, {"prompt": "Hi."})
    response = await client.post(
        f"/v1/agents/{agent['id']}/branches", headers=org.headers, json={"name": "tools"}
    )
    assert response.status_code == 201
    await add_test(client, org, agent["id"], status=422, **GOOD)
    await commit(client, org, agent["id"], branch="tools", config=CONFIG)
    created = await add_test(client, org, agent["id"], **GOOD)
    assert created["test"]["mocks"] == {"book": {"confirmed": True}}


async def test_another_organizations_agent_and_tests_are_not_found(app, client):
    owner, other = await make_org(app), await make_org(app, "Other")
    agent = await create_agent(client, owner, CONFIG)
    await add_test(client, owner, agent["id"], **GOOD)
    base = f"/v1/agents/{agent['id']}"
    for method, path, body in [
        ("GET", "/tests", None),
        ("GET", "/tests/books a cleaning", None),
        ("PATCH", "/tests/books a cleaning", {"repeat": 2}),
        ("DELETE", "/tests/books a cleaning", None),
        ("POST", "/tests", GOOD),
        ("POST", "/test_runs", {}),
        ("GET", "/test_runs", None),
    ]:
        response = await client.request(method, base + path, headers=other.headers, json=body)
        assert response.status_code == 404, (method, path, response.text)
        assert response.json()["error"] == "Agent not found"
    assert (await client.get(f"{base}/tests", headers=owner.headers)).json()["tests"]
