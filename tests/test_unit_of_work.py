"""One unit of work per request: committed before the response when the handler succeeds,
rolled back entirely when it raises, whatever the error (STYLE: unit of work)."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from callplane.errors import Conflict, InvalidInput, NotFound
from callplane.http.deps import SessionDep
from callplane.http.families import STATUS
from callplane.http.routing import family_router
from callplane.kit.scopes import KEYLESS
from callplane.models.orgs import Organization
from tests.conftest import client_for
from tests.factories import runtime_of


def _with_probe_routes(app: FastAPI) -> FastAPI:
    router = family_router(STATUS, scopes=KEYLESS)
    errors = {"invalid": InvalidInput("no"), "missing": NotFound("no"), "conflict": Conflict("no")}

    @router.post("/probe/{outcome}")
    async def probe(outcome: str, session: SessionDep) -> dict[str, bool]:
        session.add(Organization(name=f"written-then-{outcome}"))
        await session.flush()
        if outcome == "crash":
            raise RuntimeError("a bug after a write")
        if outcome in errors:
            raise errors[outcome]
        return {"ok": True}

    app.include_router(router)
    return app


async def _organizations(app: FastAPI) -> list[str]:
    async with runtime_of(app).db.session(write=False) as session:
        return list(await session.scalars(select(Organization.name)))


@pytest.mark.parametrize("outcome, status", [("invalid", 422), ("missing", 404), ("conflict", 409)])
async def test_a_domain_error_after_a_write_leaves_nothing(app, outcome, status):
    _with_probe_routes(app)
    async with client_for(app) as c:
        response = await c.post(f"/probe/{outcome}")
    assert response.status_code == status
    assert await _organizations(app) == []


async def test_a_crash_after_a_write_leaves_nothing(app):
    _with_probe_routes(app)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        response = await c.post("/probe/crash")
    assert response.status_code == 500
    assert await _organizations(app) == []


async def test_a_success_is_committed_before_the_response(app):
    _with_probe_routes(app)
    async with client_for(app) as c:
        assert (await c.post("/probe/ok")).status_code == 200
    # Read on another connection: the write is already durable.
    async with runtime_of(app).db.session(write=False) as session:
        count = await session.scalar(select(func.count()).select_from(Organization))
    assert count == 1


async def test_a_session_outside_a_family_route_is_refused_loudly(app):
    @app.get("/not-a-family-route")
    async def plain(session: SessionDep) -> dict[str, bool]:  # pragma: no cover - never runs
        return {"ok": True}

    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        response = await c.get("/not-a-family-route")
    assert response.status_code == 500
