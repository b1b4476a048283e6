"""Scoped API keys (docs/privacy.md): creation, listing, revocation, scopes, expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from callplane.kit.scopes import SCOPES
from callplane.kit.tenancy import update_owned
from callplane.models.orgs import ApiKey
from tests.factories import make_org, runtime_of

KEYS = "/v1/api_keys"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def test_create_list_and_revoke_a_scoped_key(app, client):
    org = await make_org(app)
    response = await client.post(
        KEYS, headers=org.headers, json={"name": "reporting", "scopes": ["calls:read"]}
    )
    assert response.status_code == 201
    created = response.json()["api_key"]
    assert created["name"] == "reporting"
    assert created["scopes"] == ["calls:read"]
    assert created["key"].startswith("cp_")
    assert created["expires_at"] is None

    listed = (await client.get(KEYS, headers=org.headers)).json()
    assert [k["id"] for k in listed["api_keys"]] == [org.key_id, created["id"]]
    assert listed["api_keys"][0]["scopes"] == ["*"]  # keys made before scopes hold everything
    assert all("key" not in k for k in listed["api_keys"])
    assert listed["total_count"] == 2

    reader = bearer(created["key"])
    assert (await client.get("/v1/calls", headers=reader)).status_code == 200
    refused = await client.get("/v1/agents", headers=reader)
    assert refused.status_code == 403
    assert refused.json()["error"] == "This API key lacks the scope agents:read"
    assert refused.json()["status"] == "error"

    gone = await client.delete(f"{KEYS}/{created['id']}", headers=org.headers)
    assert gone.json() == {"success": True}
    listed = (await client.get(KEYS, headers=org.headers)).json()["api_keys"]
    assert listed[1]["revoked_at"] is not None


async def test_scope_errors_take_each_familys_shape(app, client):
    org = await make_org(app)
    key = (
        await client.post(KEYS, headers=org.headers, json={"name": "n", "scopes": ["data:read"]})
    ).json()["api_key"]["key"]
    find = await client.get("/v1/calls/find_by_attribute?key=a&value=b", headers=bearer(key))
    assert find.status_code == 403
    assert find.json() == {"success": False, "errors": ["This API key lacks the scope calls:read"]}
    plain = await client.get("/v1/numbers", headers=bearer(key))
    assert plain.json() == {"error": "This API key lacks the scope numbers:write"}
    detail = await client.get("/v1/call_tags", headers=bearer(key))
    assert detail.json() == {"detail": "This API key lacks the scope calls:read"}


async def test_unknown_scopes_are_422_naming_them(app, client):
    org = await make_org(app)
    response = await client.post(
        KEYS,
        headers=org.headers,
        json={"name": "n", "scopes": ["calls:read", "calls:delete", "root"]},
    )
    assert response.status_code == 422
    body = response.json()
    assert "'calls:delete'" in body["error"] and "'root'" in body["error"]
    empty = await client.post(KEYS, headers=org.headers, json={"name": "n", "scopes": []})
    assert empty.status_code == 422


@pytest.mark.parametrize(
    "body",
    [
        {"name": "n"},
        {"name": "", "scopes": ["*"]},
        {"name": "n", "scopes": "calls:read"},
        {"name": "n", "scopes": [1]},
        {"name": "n", "scopes": ["*"], "expires_at": "tomorrow"},
        {"name": "n", "scopes": ["*"], "expires_at": "2001-01-01T00:00:00Z"},
        {"name": "n", "scopes": ["*"], "extra": True},
    ],
)
async def test_bad_bodies_are_422(app, client, body):
    org = await make_org(app)
    response = await client.post(KEYS, headers=org.headers, json=body)
    assert response.status_code == 422
    assert response.json()["status"] == "error"


async def test_a_key_cannot_hand_out_scopes_it_lacks(app, client):
    org = await make_org(app)
    key = (
        await client.post(
            KEYS, headers=org.headers, json={"name": "n", "scopes": ["keys:write", "calls:read"]}
        )
    ).json()["api_key"]["key"]
    more = await client.post(
        KEYS, headers=bearer(key), json={"name": "m", "scopes": ["calls:read", "calls:write"]}
    )
    assert more.status_code == 403
    assert "calls:write" in more.json()["error"]
    everything = await client.post(KEYS, headers=bearer(key), json={"name": "m", "scopes": ["*"]})
    assert everything.status_code == 403
    fewer = await client.post(
        KEYS, headers=bearer(key), json={"name": "m", "scopes": ["calls:read"]}
    )
    assert fewer.status_code == 201


async def test_an_expired_key_is_401(app, client):
    org = await make_org(app)
    soon = datetime.now(UTC) + timedelta(seconds=60)
    created = (
        await client.post(
            KEYS,
            headers=org.headers,
            json={"name": "n", "scopes": ["*"], "expires_at": soon.isoformat()},
        )
    ).json()["api_key"]
    assert created["expires_at"] is not None
    assert (await client.get("/v1/calls", headers=bearer(created["key"]))).status_code == 200
    async with runtime_of(app).db.session(write=True) as session:
        await session.execute(
            update_owned(ApiKey, org.id)
            .where(ApiKey.id == created["id"])
            .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
        await session.commit()
    runtime_of(app).key_cache._entries.clear()
    response = await client.get("/v1/calls", headers=bearer(created["key"]))
    assert response.status_code == 401
    assert response.json()["error"] == "API key expired"
    assert response.headers["www-authenticate"] == "Bearer"


async def test_keys_of_another_organization_are_not_found(app, client):
    org, other = await make_org(app), await make_org(app, "Other")
    assert (await client.delete(f"{KEYS}/{other.key_id}", headers=org.headers)).status_code == 404
    assert (await client.delete(f"{KEYS}/99999", headers=org.headers)).status_code == 404
    assert (await client.delete(f"{KEYS}/abc", headers=org.headers)).status_code == 422
    listed = (await client.get(KEYS, headers=org.headers)).json()["api_keys"]
    assert [k["id"] for k in listed] == [org.key_id]


def test_the_scope_list_is_the_documented_one():
    assert len(SCOPES) == 14 and len(set(SCOPES)) == 14
