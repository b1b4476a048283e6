"""Webhook endpoints read one by one and edited (GET/PATCH /v1/webhooks/{id}), and their secrets
encrypted at rest with the deployment's key (issues 27 and 23)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import select, text
from standardwebhooks.webhooks import Webhook

from callplane.kit.db import Database
from callplane.migrate import upgrade
from callplane.models.orgs import Organization
from callplane.models.webhooks import WebhookEndpoint
from callplane.webhooks.secrets import PREFIX, SecretBox
from tests.conftest import _pg_admin, client_for
from tests.engine_support import create_call, engine_app, wait_for_call
from tests.factories import make_org, runtime_of
from tests.test_calls_helpers import assert_status_error
from tests.test_migrations import _downgrade, _fresh_url
from tests.webhook_receiver import receiver


async def _hook(client, org, url, **body):
    response = await client.post("/v1/webhooks", json={"url": url, **body}, headers=org.headers)
    assert response.status_code == 201, response.text
    return response.json()["webhook"]


async def test_an_endpoint_is_read_and_edited(make_app):
    app = await make_app(webhook_allow_private_networks=True)
    org = await make_org(app)
    other = await make_org(app, "other")
    async with client_for(app) as client:
        hook = await _hook(client, org, "http://127.0.0.1:9/a", description="CRM")
        path = f"/v1/webhooks/{hook['id']}"
        read = (await client.get(path, headers=org.headers)).json()["webhook"]
        assert read == {k: v for k, v in hook.items() if k != "secret"}

        patched = await client.patch(
            path,
            json={"url": "http://127.0.0.1:9/b", "events": ["call.ended"], "enabled": False},
            headers=org.headers,
        )
        assert patched.status_code == 200, patched.text
        changed = patched.json()["webhook"]
        assert changed["url"] == "http://127.0.0.1:9/b"
        assert changed["events"] == ["call.ended"]
        assert changed["enabled"] is False
        assert changed["description"] == "CRM"  # omitted: kept
        cleared = await client.patch(path, json={"description": None}, headers=org.headers)
        assert cleared.json()["webhook"]["description"] is None
        assert cleared.json()["webhook"]["events"] == ["call.ended"]

        for body, field in [
            ({"url": "ftp://x"}, "url"),
            ({"events": ["call.nope"]}, "events"),
            ({"enabled": "maybe"}, "enabled"),
            ({"url": None}, "url"),
            ({"enabled": None}, "enabled"),
        ]:
            bad = await client.patch(path, json=body, headers=org.headers)
            error = assert_status_error(bad, 422)
            assert field in str(error), error
        again = (await client.get(path, headers=org.headers)).json()["webhook"]
        assert again["url"] == "http://127.0.0.1:9/b" and again["enabled"] is False

        for method in ("GET", "PATCH"):
            theirs = await client.request(method, path, json={}, headers=other.headers)
            assert assert_status_error(theirs, 404)["error"] == "Webhook not found"
        missing = await client.get(f"/v1/webhooks/{uuid.uuid4()}", headers=org.headers)
        assert assert_status_error(missing, 404)["error"] == "Webhook not found"


async def test_private_destinations_are_refused_on_edit_unless_allowed(make_app):
    permissive = await make_app(webhook_allow_private_networks=True)
    strict = await make_app()
    org = await make_org(permissive)
    async with client_for(permissive) as setup, client_for(strict) as client:
        hook = await _hook(setup, org, "http://127.0.0.1:9/a")
        refused = await client.patch(
            f"/v1/webhooks/{hook['id']}", json={"url": "http://10.0.0.1/x"}, headers=org.headers
        )
        assert assert_status_error(refused, 422)


async def test_a_disabled_endpoint_gets_no_events(make_app):
    app = await engine_app(make_app, webhook_allow_private_networks=True)
    org = await make_org(app)
    async with receiver() as off, receiver() as on, client_for(app) as client:
        paused = await _hook(client, org, off.url, events=["call.ended"])
        await client.patch(
            f"/v1/webhooks/{paused['id']}", json={"enabled": False}, headers=org.headers
        )
        await _hook(client, org, on.url, events=["call.ended"])
        await wait_for_call(client, org, await create_call(client, org, "+14155550001"))
        await on.wait_for(1)
    assert off.received == []


@pytest.mark.parametrize("stored_key", [True, False], ids=["stored-key", "configured-key"])
async def test_secrets_are_encrypted_at_rest_and_signing_still_verifies(make_app, stored_key):
    overrides = {"signing_key": None} if stored_key else {}
    app = await engine_app(make_app, webhook_allow_private_networks=True, **overrides)
    org = await make_org(app)
    async with receiver() as rec, client_for(app) as client:
        hook = await _hook(client, org, rec.url, events=["call.ended"])
        async with runtime_of(app).db.session(write=False) as session:
            stored = await session.scalar(
                select(WebhookEndpoint.secret).where(
                    WebhookEndpoint.organization_id == org.id,
                    WebhookEndpoint.id == uuid.UUID(hook["id"]),
                )
            )
        assert stored is not None and stored.startswith(PREFIX)
        assert hook["secret"] not in stored
        assert hook["secret"].removeprefix("whsec_") not in stored
        assert len(stored) <= 128
        await wait_for_call(client, org, await create_call(client, org, "+14155550001"))
        [received] = await rec.wait_for(1)
    payload = Webhook(hook["secret"]).verify(received.body, received.headers)
    assert payload["type"] == "call.ended"


def test_a_sealed_secret_opens_only_for_its_endpoint_and_key():
    box = SecretBox(b"key one")
    endpoint = uuid.uuid4()
    sealed = box.seal("whsec_abc", endpoint)
    assert box.open(sealed, endpoint) == "whsec_abc"
    assert box.open("whsec_plain", endpoint) == "whsec_plain"  # stored before encryption
    with pytest.raises(Exception):  # noqa: B017, PT011 (cryptography's InvalidTag)
        box.open(sealed, uuid.uuid4())
    with pytest.raises(Exception):  # noqa: B017, PT011
        SecretBox(b"key two").open(sealed, endpoint)


async def test_the_migration_encrypts_the_plaintext_secrets(tmp_path):
    url, pg_name = await _fresh_url(tmp_path)
    db = Database(url, pool_size=1)
    endpoint = uuid.uuid4()
    plain = "whsec_" + "A" * 44
    try:
        await upgrade(db)
        await _downgrade(db, "0009")
        now = datetime.now(UTC).replace(tzinfo=None)
        async with db.engine.begin() as conn:
            org = (
                await conn.execute(
                    Organization.__table__.insert()
                    .values(name="o", created_at=now, updated_at=now)
                    .returning(Organization.id)
                )
            ).scalar_one()
            await conn.execute(
                WebhookEndpoint.__table__.insert().values(
                    organization_id=org,
                    id=endpoint,
                    url="http://127.0.0.1:9/a",
                    enabled=True,
                    secret=plain,
                    created_at=now,
                    updated_at=now,
                )
            )
        await upgrade(db)
        async with db.engine.connect() as conn:
            stored = (await conn.execute(select(WebhookEndpoint.secret))).scalar_one()
            key = (
                await conn.execute(text("SELECT value FROM app_settings WHERE key = 'signing_key'"))
            ).scalar_one()
        assert stored.startswith(PREFIX) and "A" * 44 not in stored
        assert SecretBox(key.encode()).open(stored, endpoint) == plain
        await _downgrade(db, "0009")
        async with db.engine.connect() as conn:
            back = (await conn.execute(select(WebhookEndpoint.secret))).scalar_one()
        assert back == plain
    finally:
        await db.dispose()
        if pg_name:
            await _pg_admin(f'DROP DATABASE IF EXISTS "{pg_name}" WITH (FORCE)')


async def test_loopback_receivers_only_when_the_demo_allows_them(make_app):
    demo = await make_app(webhook_allow_loopback=True)
    strict = await make_app()
    org = await make_org(demo)
    async with client_for(demo) as local, client_for(strict) as elsewhere:
        for client, url, status in [
            (local, "http://127.0.0.1:9/hooks", 201),
            (local, "http://[::1]:9/hooks", 201),
            (local, "http://10.0.0.1/hooks", 422),  # loopback only, not private networks
            (elsewhere, "http://127.0.0.1:9/hooks", 422),
        ]:
            response = await client.post("/v1/webhooks", json={"url": url}, headers=org.headers)
            assert response.status_code == status, (url, response.text)
