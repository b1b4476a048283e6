"""HTTP conventions and limits of issue 9: HEAD, Allow, trailing slashes, CORS, trusted proxies,
the workers warning, the demo key staying revoked, signed-URL expiry, uvicorn's own 400."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx
import orjson
import pytest

from callplane.settings import Settings
from tests.conftest import client_for, make_settings
from tests.factories import make_org, runtime_of

STATUS_KEYS = {"status", "success", "error", "errors"}


@pytest.mark.parametrize("path", ["/healthz", "/v1/voices", "/v1/calls", "/v1/openapi.json"])
async def test_head_is_served_for_every_get_route(app, path) -> None:
    org = await make_org(app)
    async with client_for(app) as c:
        got = await c.get(path, headers=org.headers)
        head = await c.head(path, headers=org.headers)
    assert got.status_code == head.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]
    assert int(head.headers["content-length"]) == len(got.content)


@pytest.mark.parametrize(
    "method, path, allowed",
    [
        ("PUT", "/v1/calls", "GET, HEAD, POST"),
        ("PATCH", "/v1/data/t/1", None),  # every method of the record routes
        ("POST", "/v1/contacts/+14155550123/data", "DELETE, GET, HEAD, PUT"),
        # The concrete path owns it: not a record update of a table named "tables".
        ("PATCH", "/v1/data/tables/1", "DELETE, GET, HEAD"),
        ("PUT", "/v1/data/tables/1", "DELETE, GET, HEAD"),
    ],
)
async def test_405_allow_lists_every_method_of_the_path(app, method, path, allowed) -> None:
    org = await make_org(app)
    async with client_for(app) as c:
        response = await c.request(method, path, headers=org.headers)
    if allowed is None:
        assert response.status_code != 405
        return
    assert response.status_code == 405, response.text
    assert response.headers["allow"] == allowed
    assert set(response.json()) == STATUS_KEYS


async def test_a_trailing_slash_is_the_same_path_never_an_empty_redirect(app) -> None:
    org = await make_org(app)
    async with client_for(app) as c:
        plain = await c.get("/v1/calls", headers=org.headers)
        slashed = await c.get("/v1/calls/", headers=org.headers)
        unknown = await c.get("/v1/nothing-here/", headers=org.headers)
    assert slashed.status_code == plain.status_code == 200
    assert slashed.json() == plain.json()
    assert unknown.status_code == 404 and set(unknown.json()) == STATUS_KEYS


async def test_cors_is_off_by_default_and_preflight_works_when_configured(make_app) -> None:
    closed = await make_app()
    open_ = await make_app(cors_origins="https://app.example.com")
    org = await make_org(open_)
    preflight = {
        "Origin": "https://app.example.com",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    async with client_for(closed) as c:
        refused = await c.options("/v1/calls", headers=preflight)
    async with client_for(open_) as c:
        allowed = await c.options("/v1/calls", headers=preflight)
        other = await c.options("/v1/calls", headers={**preflight, "Origin": "https://evil.test"})
        listed = await c.get(
            "/v1/calls", headers={**org.headers, "Origin": "https://app.example.com"}
        )
    assert "access-control-allow-origin" not in refused.headers
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "https://app.example.com"
    assert "POST" in allowed.headers["access-control-allow-methods"]
    assert "access-control-allow-origin" not in other.headers
    assert listed.headers["access-control-allow-origin"] == "https://app.example.com"


async def test_trusted_proxies_give_the_client_address_to_the_failure_limit(make_app) -> None:
    app = await make_app(auth_failure_limit="2/minute", trusted_proxies="127.0.0.1")
    bad = {"Authorization": "Bearer cp_wrong_key_00000000000000000000000000"}
    # The test client connects from 127.0.0.1: the trusted proxy.
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 123))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        one = [
            (await c.get("/v1/voices", headers={**bad, "X-Forwarded-For": "203.0.113.1"}))
            for _ in range(3)
        ]
        other = await c.get("/v1/voices", headers={**bad, "X-Forwarded-For": "203.0.113.2"})
    assert [r.status_code for r in one] == [401, 401, 429]
    assert other.status_code == 401  # another client behind the same proxy is not limited


def test_serve_warns_when_workers_count_limits_in_memory() -> None:
    from callplane.server import memory_limits_warning

    base = Settings(_env_file=None)  # type: ignore[call-arg]
    assert memory_limits_warning(base, 1) is None
    warning = memory_limits_warning(base, 4)
    assert warning is not None and "4 times" in warning and "CALLPLANE_REDIS_URL" in warning
    shared = Settings(_env_file=None, redis_url="redis://127.0.0.1:6379/0")  # type: ignore[call-arg]
    assert memory_limits_warning(shared, 4) is None
    off = Settings(_env_file=None, rate_limit="off", auth_failure_limit="off")  # type: ignore[call-arg]
    assert memory_limits_warning(off, 4) is None


async def test_demo_never_revives_a_revoked_key(app) -> None:
    from callplane.demo import ensure_demo
    from callplane.orgs.service import find_tenant, revoke_key

    runtime = runtime_of(app)
    async with runtime.db.session(write=True) as session:
        org_id, key = await ensure_demo(session, runtime.settings)
        assert key is not None
        tenant = await find_tenant(session, key)
        assert tenant is not None
        await revoke_key(session, tenant.api_key_id)
        await session.commit()
    async with runtime.db.session(write=True) as session:
        again = await ensure_demo(session, runtime.settings)
        await session.commit()
    assert again == (org_id, None)
    async with client_for(app) as c:
        response = await c.get("/v1/voices", headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 401


def test_signed_urls_beyond_the_lifetime_are_refused() -> None:
    from callplane.media.signing import Forbidden, RecordingSigner
    from callplane.media.storage import URL_LIFETIME_SECONDS

    signer = RecordingSigner(Settings(_env_file=None), clock=lambda: 1_000_000.0)  # type: ignore[call-arg]
    signature = "A" * 43
    signer.check_shape(str(1_000_000 + URL_LIFETIME_SECONDS), signature)
    with pytest.raises(Forbidden):
        signer.check_shape(str(1_000_000 + 10 * 365 * 86400), signature)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _exchange(port: int, raw: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(raw)
        chunks = []
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, TimeoutError):
                break
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def test_a_malformed_or_over_long_request_is_answered_in_json_by_the_server(database_url) -> None:
    """uvicorn answers what its parser refuses itself; callplane's protocol makes that JSON and
    bounds the request line (414) and the headers (431)."""
    port = _free_port()
    env = {
        **os.environ,
        "CALLPLANE_DATABASE_URL": make_settings(database_url).database_url,
        "CALLPLANE_LOG_LEVEL": "warning",
        "CALLPLANE_WORKER": "off",
    }
    code = (
        "import uvicorn; uvicorn.run('callplane.app:create_app_from_env', factory=True, "
        f"host='127.0.0.1', port={port}, http='callplane.server:JsonHttpToolsProtocol', "
        "log_level='warning', access_log=False)"
    )
    server = subprocess.Popen([sys.executable, "-c", code], env=env)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)  # the server process is starting
        answer = _exchange(port, b"GET /v1/calls HTT\x00P/1.1\r\n\r\n")
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400")
        assert b"content-type: application/json" in head.lower()
        assert set(orjson.loads(body)) == STATUS_KEYS
        for raw, status in [
            (b"GET /v1/calls?page=" + b"9" * 120_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", b"414"),
            (
                b"GET /v1/calls HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n",
                b"431",
            ),
            (b"GET /v1/calls HTTP/1.1\r\nHost: x\r\n" + b"X-A: b\r\n" * 10_000 + b"\r\n", b"431"),
        ]:
            head, _, body = _exchange(port, raw).partition(b"\r\n\r\n")
            assert head.split(b"\r\n")[0].split(b" ")[1] == status, head[:200]
            assert b"content-type: application/json" in head.lower()
            assert set(orjson.loads(body)) == STATUS_KEYS
        # Under the limits, the request reaches the app (no key: its family's 401).
        head, _, body = _exchange(
            port, b"GET /v1/calls?page=" + b"9" * 60_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
        ).partition(b"\r\n\r\n")
        assert head.split(b"\r\n")[0].split(b" ")[1] == b"401", head[:200]
    finally:
        server.terminate()
        server.wait(timeout=10)
