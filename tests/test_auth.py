"""Authentication (SPEC: Authentication; docs/api-contract.md#identity-and-tenancy): bearer keys,
401s, revocation, tenancy."""

from __future__ import annotations

import logging

import pytest

from callplane.kit.keycache import CACHE_SECONDS, KeyCache
from callplane.orgs.service import hash_key, revoke_key
from tests.factories import make_org, runtime_of

VOICES = "/v1/voices"


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="missing"),
        pytest.param({"Authorization": ""}, id="empty"),
        pytest.param({"Authorization": "Bearer"}, id="no-token"),
        pytest.param({"Authorization": "Bearer   "}, id="blank-token"),
        pytest.param({"Authorization": "Basic dXNlcjpwYXNz"}, id="basic-scheme"),
        pytest.param({"Authorization": "Token cp_abc"}, id="other-scheme"),
        pytest.param({"Authorization": "Bearer cp_unknown_key_000000000000000000"}, id="unknown"),
        pytest.param({"Authorization": "Bearer ' OR 1=1 --"}, id="injection"),
        pytest.param({"Authorization": "Bearer " + "x" * 5000}, id="huge"),
        pytest.param({"Authorization": "Bearer clé-ünïcode".encode()}, id="utf8-bytes"),
        pytest.param({"Authorization": b"Bearer \xff\xfe"}, id="latin1-bytes"),
    ],
)
async def test_bad_credentials_are_401_with_bearer_challenge(app, client, headers):
    await make_org(app)
    response = await client.get(VOICES, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert set(response.json()) == {"error"}


async def test_valid_key_authenticates_and_scheme_is_case_insensitive(app, client):
    org = await make_org(app)
    assert (await client.get(VOICES, headers=org.headers)).status_code == 200
    lower = {"Authorization": f"bearer {org.api_key}"}
    assert (await client.get(VOICES, headers=lower)).status_code == 200


async def test_revoked_key_is_refused_within_one_second(app, client):
    now = [1000.0]
    runtime = runtime_of(app)
    runtime.key_cache = KeyCache(clock=lambda: now[0])
    org = await make_org(app)
    assert (await client.get(VOICES, headers=org.headers)).status_code == 200  # now cached

    async with runtime.db.session(write=True) as session:
        await revoke_key(session, org.key_id)
        await session.commit()

    now[0] += CACHE_SECONDS
    assert CACHE_SECONDS <= 1.0
    response = await client.get(VOICES, headers=org.headers)
    assert response.status_code == 401
    assert response.json() == {"error": "Invalid API key"}


async def test_revoked_key_is_refused_by_another_process_at_once(make_app):
    """A second app (another process's view) never saw the key: the database decides."""
    from tests.conftest import client_for

    first = await make_app()
    org = await make_org(first)
    async with runtime_of(first).db.session(write=True) as session:
        await revoke_key(session, org.key_id)
        await session.commit()
    second = await make_app()
    async with client_for(second) as c:
        assert (await c.get(VOICES, headers=org.headers)).status_code == 401


async def test_keys_are_stored_only_as_hashes(app):
    org = await make_org(app)
    from sqlalchemy import select

    from callplane.models.orgs import ApiKey

    async with runtime_of(app).db.session(write=False) as session:
        stored = (await session.scalars(select(ApiKey.key_hash))).all()
    assert stored == [hash_key(org.api_key)]
    assert org.api_key not in stored
    assert org.api_key.startswith("cp_") and len(org.api_key) >= 3 + 43


async def test_a_key_sees_only_its_organization(app, client):
    from tests.factories import load

    mine = await make_org(app, "mine")
    theirs = await make_org(app, "theirs")
    await load(app, theirs, {"voices": [{"name": "Theirs"}]})
    await load(app, mine, {"voices": [{"name": "Mine"}]})
    names = [v["name"] for v in (await client.get(VOICES, headers=mine.headers)).json()]
    assert names == ["Mine"]


async def test_logs_never_contain_the_api_key(app, client, caplog):
    org = await make_org(app)
    logger = logging.getLogger("callplane")
    logger.setLevel(logging.INFO)
    with caplog.at_level(logging.INFO, logger="callplane"):
        logger.addHandler(caplog.handler)
        try:
            await client.get(VOICES, headers=org.headers)
            await client.get(VOICES, headers={"Authorization": "Bearer cp_wrong_secret_value"})
        finally:
            logger.removeHandler(caplog.handler)
    access = [r for r in caplog.records if r.name == "callplane.access"]
    assert len(access) == 2
    text = caplog.text + " ".join(str(r.__dict__) for r in caplog.records)
    assert org.api_key not in text
    assert "cp_wrong_secret_value" not in text
