"""Operations: health, readiness, request ids, OpenAPI with the real error shapes."""

from __future__ import annotations

import asyncio
import gc
import threading
import time

from tests.conftest import client_for


async def test_healthz_and_readyz(client):
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    assert (await client.get("/readyz")).json() == {"status": "ok"}


async def test_readyz_reports_an_unreachable_database(make_app, tmp_path):
    app = await make_app(database_url=f"sqlite:///{tmp_path}/missing-dir/x.db")
    async with client_for(app) as c:
        response = await c.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable"}
    await _driver_threads_ended()


async def _driver_threads_ended(within: float = 5.0) -> None:
    """aiosqlite's thread of the connection that failed to open ends when the connection is
    collected; ended while this test's event loop still runs, it cannot answer into a closed
    loop during a later test (an error pytest then pins on that test)."""
    deadline = time.monotonic() + within
    while any(t.name.endswith("(_connection_worker_thread)") for t in threading.enumerate()):
        gc.collect()
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.02)


async def test_request_id_is_generated_or_echoed(client):
    generated = await client.get("/healthz")
    assert len(generated.headers["x-request-id"]) == 32
    echoed = await client.get("/healthz", headers={"X-Request-ID": "abc-123"})
    assert echoed.headers["x-request-id"] == "abc-123"
    hostile = await client.get("/healthz", headers={"X-Request-ID": 'a b"<script>'})
    assert hostile.headers["x-request-id"] != 'a b"<script>'


async def test_openapi_is_public_and_documents_error_shapes(client):
    response = await client.get("/v1/openapi.json")
    assert response.status_code == 200
    spec = response.json()
    schemas = spec["components"]["schemas"]

    def error_schema(path: str, method: str, code: str) -> str:
        content = spec["paths"][path][method]["responses"][code]["content"]
        return content["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]

    assert error_schema("/v1/numbers/{uuid}", "patch", "422") == "PlainError"
    assert error_schema("/v1/voices/{uuid}", "get", "422") == "ValidationDetail"
    assert error_schema("/v1/voices/{uuid}", "get", "404") == "PlainError"
    assert error_schema("/v1/call_tags", "get", "401") == "DetailError"
    assert set(schemas["PlainError"]["properties"]) == {"error"}
    assert set(schemas["DetailItem"]["properties"]) == {"loc", "msg", "type"}
    assert "bearer" in str(spec["components"]["securitySchemes"]).lower()
    assert (await client.get("/v1/docs")).status_code == 200
