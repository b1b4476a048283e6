"""GET /v1/voices and GET /v1/voices/{uuid} (SPEC; docs/api-contract.md)."""

from __future__ import annotations

import uuid

from tests.factories import load, make_org

VOICE_A = "0b7d6f3a-2c1e-4f5a-9b8c-7d6e5f4a3b01"
VOICE_B = "0b7d6f3a-2c1e-4f5a-9b8c-7d6e5f4a3b02"


async def test_list_voices_ordered_by_name_then_id(app, client):
    org = await make_org(app)
    await load(
        app,
        org,
        {
            "voices": [
                {"id": VOICE_B, "name": "Zed", "languages": ["en-US"], "tags": ["calm"]},
                {"id": "00000000-0000-4000-8000-00000000000b", "name": "Ann"},
                {"id": "00000000-0000-4000-8000-00000000000a", "name": "Ann"},
            ]
        },
    )
    response = await client.get("/v1/voices", headers=org.headers)
    assert response.status_code == 200
    body = response.json()
    assert [(v["name"], v["id"]) for v in body] == [
        ("Ann", "00000000-0000-4000-8000-00000000000a"),
        ("Ann", "00000000-0000-4000-8000-00000000000b"),
        ("Zed", VOICE_B),
    ]
    zed = body[2]
    assert set(zed) == {
        "id",
        "name",
        "languages",
        "organization_id",
        "created_at",
        "updated_at",
        "description",
        "tags",
        "engine",
    }
    assert zed["organization_id"] == org.id
    assert zed["languages"] == ["en-US"] and zed["tags"] == ["calm"]
    assert zed["created_at"].endswith("Z")


async def test_list_voices_empty_is_empty_array(app, client):
    org = await make_org(app)
    response = await client.get("/v1/voices", headers=org.headers)
    assert response.status_code == 200
    assert response.json() == []


async def test_get_voice(app, client):
    org = await make_org(app)
    await load(app, org, {"voices": [{"id": VOICE_A, "name": "Aria", "description": "Warm"}]})
    response = await client.get(f"/v1/voices/{VOICE_A}", headers=org.headers)
    assert response.status_code == 200
    assert response.json()["name"] == "Aria"
    assert response.json()["description"] == "Warm"
    # Upper-case uuids name the same voice.
    upper = await client.get(f"/v1/voices/{VOICE_A.upper()}", headers=org.headers)
    assert upper.status_code == 200


async def test_unknown_voice_is_404_voice_not_found(app, client):
    org = await make_org(app)
    response = await client.get(f"/v1/voices/{uuid.uuid4()}", headers=org.headers)
    assert response.status_code == 404
    assert response.json() == {"error": "Voice not found"}


async def test_malformed_voice_uuid_is_422_detail(app, client):
    org = await make_org(app)
    response = await client.get("/v1/voices/not-a-uuid'--", headers=org.headers)
    assert response.status_code == 422
    [item] = response.json()["detail"]
    assert set(item) == {"loc", "msg", "type"}
    assert item["loc"] == ["path", "uuid"]
    assert "not-a-uuid" not in item["msg"]


async def test_other_organizations_voices_are_invisible(app, client):
    mine = await make_org(app, "mine")
    theirs = await make_org(app, "theirs")
    await load(app, theirs, {"voices": [{"id": VOICE_A, "name": "Secret"}]})
    assert (await client.get("/v1/voices", headers=mine.headers)).json() == []
    response = await client.get(f"/v1/voices/{VOICE_A}", headers=mine.headers)
    assert response.status_code == 404
    assert response.json() == {"error": "Voice not found"}


async def test_same_voice_id_in_two_organizations(app, client):
    mine = await make_org(app, "mine")
    theirs = await make_org(app, "theirs")
    await load(app, mine, {"voices": [{"id": VOICE_A, "name": "Mine"}]})
    await load(app, theirs, {"voices": [{"id": VOICE_A, "name": "Theirs"}]})
    response = await client.get(f"/v1/voices/{VOICE_A}", headers=mine.headers)
    assert response.json()["name"] == "Mine"
