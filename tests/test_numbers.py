"""PATCH /v1/numbers/{uuid} (SPEC; docs/api-contract.md#phone-numbers-voices-call-tags-feedback):
errors are {"error": str}."""

from __future__ import annotations

import uuid

import pytest

from tests.factories import load, make_org

NUMBER = "3c2b1a09-8f7e-4d6c-b5a4-938271605f01"
AGENT_UUID = "6f1c2a1e-8a43-4c39-9a55-1d2f3e4a5b01"
PHONE_FIELDS = {
    "id",
    "number",
    "friendly_name",
    "area_code",
    "country",
    "created_at",
    "updated_at",
    "agent",
}


async def _number(app, org, **extra):
    doc = {
        "agents": [{"id": 7, "uuid": AGENT_UUID, "name": "Front desk"}],
        "phone_numbers": [
            {
                "id": NUMBER,
                "number": "+14155550123",
                "friendly_name": "Main",
                "area_code": "415",
                "country": "US",
                "agent_id": 7,
                **extra,
            }
        ],
    }
    await load(app, org, doc)


async def test_rename_number(app, client):
    org = await make_org(app)
    await _number(app, org, created_at="2026-01-01T00:00:00Z")
    response = await client.patch(
        f"/v1/numbers/{NUMBER}", headers=org.headers, json={"friendly_name": "  Support line  "}
    )
    assert response.status_code == 200
    body = response.json()
    assert set(body) == PHONE_FIELDS
    assert body["friendly_name"] == "Support line"
    assert body["number"] == "+14155550123" and body["area_code"] == "415"
    assert body["agent"] == {"id": 7, "name": "Front desk", "uuid": AGENT_UUID, "branch": "main"}
    assert body["updated_at"] > body["created_at"]
    again = await client.patch(
        f"/v1/numbers/{NUMBER}", headers=org.headers, json={"friendly_name": "Ünïcødé ☎"}
    )
    assert again.json()["friendly_name"] == "Ünïcødé ☎"


async def test_number_without_agent_has_null_agent(app, client):
    org = await make_org(app)
    await load(app, org, {"phone_numbers": [{"id": NUMBER, "number": "+14155550123"}]})
    response = await client.patch(
        f"/v1/numbers/{NUMBER}", headers=org.headers, json={"friendly_name": "x"}
    )
    assert response.status_code == 200 and response.json()["agent"] is None


async def test_unknown_number_is_404(app, client):
    org = await make_org(app)
    response = await client.patch(
        f"/v1/numbers/{uuid.uuid4()}", headers=org.headers, json={"friendly_name": "x"}
    )
    assert response.status_code == 404
    assert response.json() == {"error": "Phone number not found"}


async def test_another_organizations_number_is_404_and_unchanged(app, client):
    mine = await make_org(app, "mine")
    theirs = await make_org(app, "theirs")
    await _number(app, theirs)
    response = await client.patch(
        f"/v1/numbers/{NUMBER}", headers=mine.headers, json={"friendly_name": "hijack"}
    )
    assert response.status_code == 404
    assert response.json() == {"error": "Phone number not found"}
    check = await client.patch(
        f"/v1/numbers/{NUMBER}", headers=theirs.headers, json={"friendly_name": "Main"}
    )
    assert check.json()["friendly_name"] == "Main"


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"friendly_name": ""},
        {"friendly_name": "   "},
        {"friendly_name": None},
        {"friendly_name": 12},
        {"friendly_name": ["a"]},
        {"friendly_name": "x" * 256},
        {"friendly_name": "tab\there"},
        [],
        "friendly",
    ],
    ids=[
        "missing",
        "empty",
        "blank",
        "null",
        "number",
        "list",
        "too-long",
        "control-char",
        "array-body",
        "string-body",
    ],
)
async def test_invalid_friendly_name_is_422_error(app, client, body):
    org = await make_org(app)
    await _number(app, org)
    response = await client.patch(f"/v1/numbers/{NUMBER}", headers=org.headers, json=body)
    assert response.status_code == 422
    assert set(response.json()) == {"error"}
    assert isinstance(response.json()["error"], str)


async def test_255_characters_is_the_limit(app, client):
    org = await make_org(app)
    await _number(app, org)
    ok = await client.patch(
        f"/v1/numbers/{NUMBER}", headers=org.headers, json={"friendly_name": "é" * 255}
    )
    assert ok.status_code == 200 and ok.json()["friendly_name"] == "é" * 255


@pytest.mark.parametrize("path", ["not-a-uuid", "1' OR '1'='1", "%00", "%E2%98%8E", "1" * 300])
async def test_malformed_uuid_is_422_error(app, client, path):
    org = await make_org(app)
    response = await client.patch(
        f"/v1/numbers/{path}", headers=org.headers, json={"friendly_name": "x"}
    )
    assert response.status_code == 422
    assert set(response.json()) == {"error"}
