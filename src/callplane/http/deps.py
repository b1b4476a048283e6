"""Dependencies every router uses: the unit of work and the calling organization.

``SessionDep`` is one session per request. The family route class (``http.routing``) commits it
when the handler returns, before the response is sent, and rolls it back when anything is raised.
Services flush, never commit.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from callplane.http.auth import authenticate
from callplane.orgs.service import Tenant
from callplane.runtime import Runtime

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def get_runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


_SESSION = "callplane.session"
UNIT_OF_WORK = "callplane.unit_of_work"


async def get_session(request: Request) -> AsyncSession:
    """The request's session, opened on first use. ``end_unit_of_work`` commits or discards it."""
    if UNIT_OF_WORK not in request.scope:
        # Only routes of a family router end their unit of work; anywhere else the session would
        # never be committed nor released.
        raise RuntimeError("SessionDep used on a route that is not built by family_router()")
    session: AsyncSession | None = request.scope.get(_SESSION)
    if session is None:
        runtime: Runtime = request.app.state.runtime
        session = runtime.db.session(write=request.method not in _READ_METHODS)
        request.scope[_SESSION] = session
    return session


async def end_unit_of_work(request: Request, *, commit: bool) -> None:
    """Commit (the handler succeeded) or roll back (it raised), then release the connection.

    Called by the family route class around the whole handler, so a domain error raised after a
    write can never leave that write behind, and the commit happens before the response is sent.
    """
    session: AsyncSession | None = request.scope.pop(_SESSION, None)
    if session is None:
        return
    try:
        if commit:
            await session.commit()
        else:
            await session.rollback()
    finally:
        await session.close()


SessionDep = Annotated[AsyncSession, Depends(get_session)]
RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


async def current_tenant(request: Request, session: SessionDep) -> Tenant:
    """The calling organization. The bearer scheme is documented in OpenAPI by ``http.openapi``."""
    runtime: Runtime = request.app.state.runtime
    return await authenticate(request, session, runtime.key_cache, runtime.limiter)


CurrentTenant = Annotated[Tenant, Depends(current_tenant)]
