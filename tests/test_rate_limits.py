"""Rate limits (SPEC: Limits; README.md#configuration): per API key, per address for failed logins,
429 shapes.

Each test runs with the in-memory limiter and with Redis (shared by two app instances, as by two
server processes).
"""

from __future__ import annotations

import uuid

import pytest

from callplane.orgs.service import issue_key
from tests.conftest import client_for
from tests.factories import make_org, runtime_of


@pytest.fixture(params=["memory", "redis"])
def limiter_settings(request) -> dict[str, str]:
    if request.param == "memory":
        return {}
    redis_url = request.getfixturevalue("redis_url")
    return {"redis_url": redis_url, "redis_prefix": f"cptest-{uuid.uuid4().hex}"}


async def test_per_key_limit_then_429_with_retry_after(make_app, limiter_settings):
    app = await make_app(rate_limit="3/minute", **limiter_settings)
    org = await make_org(app)
    async with client_for(app) as c:
        statuses = [(await c.get("/v1/voices", headers=org.headers)).status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        limited = await c.get("/v1/voices", headers=org.headers)
    assert limited.status_code == 429
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    assert set(limited.json()) == {"error"}


async def test_limit_is_per_key(make_app, limiter_settings):
    app = await make_app(rate_limit="2/minute", **limiter_settings)
    org = await make_org(app)
    async with runtime_of(app).db.session(write=True) as session:
        other = await issue_key(session, org.id, name="second")
        await session.commit()
    async with client_for(app) as c:
        for _ in range(2):
            assert (await c.get("/v1/voices", headers=org.headers)).status_code == 200
        assert (await c.get("/v1/voices", headers=org.headers)).status_code == 429
        second = {"Authorization": f"Bearer {other.api_key}"}
        assert (await c.get("/v1/voices", headers=second)).status_code == 200


async def test_limit_is_shared_by_processes_through_redis(make_app, redis_url):
    shared = {"redis_url": redis_url, "redis_prefix": f"cptest-{uuid.uuid4().hex}"}
    first = await make_app(rate_limit="4/minute", **shared)
    second = await make_app(rate_limit="4/minute", **shared)
    org = await make_org(first)
    statuses = []
    async with client_for(first) as a, client_for(second) as b:
        for client in (a, b, a, b, a, b):
            statuses.append((await client.get("/v1/voices", headers=org.headers)).status_code)
    assert statuses == [200, 200, 200, 200, 429, 429]


@pytest.mark.parametrize("value", ["0", "off", "OFF"])
async def test_rate_limit_can_be_disabled(make_app, value):
    app = await make_app(rate_limit=value)
    org = await make_org(app)
    async with client_for(app) as c:
        statuses = {(await c.get("/v1/voices", headers=org.headers)).status_code for _ in range(30)}
    assert statuses == {200}


async def test_failed_authentication_is_limited_per_address_never_refusing_a_valid_key(
    make_app, limiter_settings
):
    app = await make_app(auth_failure_limit="3/minute", **limiter_settings)
    org = await make_org(app)
    bad = {"Authorization": "Bearer cp_guess_000000000000000000000000000000"}
    async with client_for(app) as c:
        statuses = [(await c.get("/v1/voices", headers=bad)).status_code for _ in range(4)]
        assert statuses == [401, 401, 401, 429]
        blocked = await c.get("/v1/call_tags", headers=bad)
        assert blocked.status_code == 429
        assert set(blocked.json()) == {"detail"}
        assert int(blocked.headers["retry-after"]) >= 1
        # A valid key from the same address is never refused: one client sending bad keys
        # behind a shared proxy or NAT must not lock out everyone else there.
        assert (await c.get("/v1/voices", headers=org.headers)).status_code == 200
        assert (await c.get("/v1/voices", headers=bad)).status_code == 429


async def test_successful_requests_do_not_count_as_failures(make_app):
    app = await make_app(auth_failure_limit="2/minute")
    org = await make_org(app)
    async with client_for(app) as c:
        statuses = {(await c.get("/v1/voices", headers=org.headers)).status_code for _ in range(10)}
    assert statuses == {200}


async def test_unreachable_redis_fails_open(make_app):
    app = await make_app(rate_limit="1/minute", redis_url="redis://127.0.0.1:1/0")
    org = await make_org(app)
    async with client_for(app) as c:
        statuses = [(await c.get("/v1/voices", headers=org.headers)).status_code for _ in range(3)]
    assert statuses == [200, 200, 200]


async def test_an_app_that_stops_closes_its_redis_connections(database_url, redis_url):
    """A stopped app leaves no connection to Redis open (nor one for the garbage collector)."""
    import redis.asyncio

    from callplane.app import create_app
    from tests.conftest import make_settings

    name = f"cptest-{uuid.uuid4().hex[:12]}"
    url = f"{redis_url}{'&' if '?' in redis_url else '?'}client_name={name}"
    app = create_app(make_settings(database_url, rate_limit="5/minute", redis_url=url))
    admin = redis.asyncio.Redis.from_url(redis_url)

    async def ours() -> int:
        return sum(client["name"] == name for client in await admin.client_list())

    try:
        async with app.router.lifespan_context(app):
            org = await make_org(app)
            async with client_for(app) as c:
                assert (await c.get("/v1/voices", headers=org.headers)).status_code == 200
            assert await ours() >= 1
        assert await ours() == 0
    finally:
        await admin.aclose()
