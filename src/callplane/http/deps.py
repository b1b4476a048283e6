"""Dependencies every router uses: the unit of work and the calling organization.

``SessionDep`` is one session per request, committed when the endpoint returns and before the
response is sent (function scope), rolled back on any error. Services flush, never commit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
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


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    runtime: Runtime = request.app.state.runtime
    session = runtime.db.session(write=request.method not in _READ_METHODS)
    try:
        yield session
        await session.commit()
    except BaseException:
        await session.rollback()
        raise
    finally:
        await session.close()


SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]
RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


async def current_tenant(request: Request, session: SessionDep) -> Tenant:
    """The calling organization. The bearer scheme is documented in OpenAPI by ``http.openapi``."""
    runtime: Runtime = request.app.state.runtime
    return await authenticate(request, session, runtime.key_cache, runtime.limiter)


CurrentTenant = Annotated[Tenant, Depends(current_tenant)]
