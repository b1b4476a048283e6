"""The agent's ``disclosure``: said before anything else on every call, rendered like
``first_message``, in the transcript like any agent line; at most 500 characters."""

from __future__ import annotations

from tests.agents_support import create_agent
from tests.conftest import client_for
from tests.engine_support import create_call, engine_app, wait_for_call
from tests.factories import make_org

STATUS_KEYS = {"status", "success", "error", "errors"}
DISCLOSURE = "This call is recorded, {{name}}, and I am an automated assistant."


async def test_a_simulated_call_opens_with_the_disclosure_then_the_first_message(make_app):
    app = await engine_app(make_app)
    org = await make_org(app)
    async with client_for(app) as client:
        agent = await create_agent(
            client, org, {"disclosure": DISCLOSURE, "first_message": "Hi, this is Acme."}
        )
        call_id = await create_call(
            client, org, "+14155550123", agent_id=agent["id"], params={"name": "Ada"}
        )
        call = await wait_for_call(client, org, call_id)
    lines = [(entry["role"], entry["text"]) for entry in call["transcripts"]]
    assert lines[:2] == [
        ("assistant", "This call is recorded, Ada, and I am an automated assistant."),
        ("assistant", "Hi, this is Acme."),
    ]
    # The person's "Hello?" at the answer comes after them, and nothing comes before them.
    assert ("user", "Hello?") in lines[2:]
    stamps = [entry["timestamp"] for entry in call["transcripts"]]
    assert stamps == sorted(stamps)


async def test_a_voicemail_hears_the_disclosure_then_the_message(make_app):
    app = await engine_app(make_app)
    org = await make_org(app)
    async with client_for(app) as client:
        agent = await create_agent(
            client,
            org,
            {
                "disclosure": DISCLOSURE,
                "first_message": "Hi, this is Acme.",
                "voicemail": {"action": "leave_message", "message": "Please call Acme back."},
            },
        )
        # The simulated network answers numbers ending 0004 with a voicemail greeting.
        call_id = await create_call(
            client, org, "+14155550004", agent_id=agent["id"], params={"name": "Ada"}
        )
        call = await wait_for_call(client, org, call_id)
    assert call["answered_by"] == "voicemail"
    said = [entry["text"] for entry in call["transcripts"] if entry["role"] == "assistant"]
    assert said == [
        "This call is recorded, Ada, and I am an automated assistant.",
        "Please call Acme back.",
    ]


async def test_the_text_conversation_route_opens_with_the_disclosure(app, client):
    org = await make_org(app)
    agent = await create_agent(
        client, org, {"disclosure": DISCLOSURE, "first_message": "Hi, this is Acme."}
    )
    response = await client.post(
        f"/v1/agents/{agent['id']}/conversations",
        headers=org.headers,
        json={"params": {"name": "Ada"}},
    )
    assert response.status_code == 200, response.text
    assert [e["text"] for e in response.json()["entries"]] == [
        "This call is recorded, Ada, and I am an automated assistant.",
        "Hi, this is Acme.",
    ]


async def test_a_disclosure_over_500_characters_is_422(app, client):
    org = await make_org(app)
    response = await client.post(
        "/v1/agents", headers=org.headers, json={"name": "A", "config": {"disclosure": "x" * 501}}
    )
    assert response.status_code == 422, response.text
    body = response.json()
    assert set(body) == STATUS_KEYS and "config/disclosure" in body["error"]
    for bad in (42, ["a"], "a\x00b"):
        response = await client.post(
            "/v1/agents", headers=org.headers, json={"name": "A", "config": {"disclosure": bad}}
        )
        assert response.status_code == 422, response.text
    listed = await client.get("/v1/agents", headers=org.headers)
    assert listed.json()["total_count"] == 0
    await create_agent(client, org, {"disclosure": "x" * 500})
