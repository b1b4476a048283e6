"""Dependencies every router uses: the request's session, the runtime and the calling
organization.

``SessionDep`` is the request's unit of work (``http.unit_of_work``): committed when the handler
returns, before the response is sent, and rolled back when anything is raised. Services flush,
never commit.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import Depends
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from callplane.audit.requests import attribute
from callplane.http.auth import authenticate, authorize
from callplane.http.unit_of_work import UNIT_OF_WORK, end_unit_of_work, get_session
from callplane.kit.tenancy import Tenant
from callplane.runtime import Runtime

#: The unit of work's pieces stay importable from here (the dashboard's route class uses them).
__all__ = [
    "UNIT_OF_WORK",
    "CurrentTenant",
    "RuntimeDep",
    "SessionDep",
    "current_tenant",
    "end_unit_of_work",
    "get_runtime",
]


def get_runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


SessionDep = Annotated[AsyncSession, Depends(get_session)]
RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


async def current_tenant(request: Request) -> Tenant:
    """The calling organization, once its key is known to hold the scope of the route matched
    (the fast paths leave their route in the scope as routing does). The bearer scheme is
    documented in OpenAPI by ``http.openapi``."""
    runtime: Runtime = request.app.state.runtime
    tenant = await authenticate(
        request, partial(get_session, request), runtime.key_cache, runtime.limiter
    )
    authorize(tenant, request.scope.get("route"))
    attribute(request.scope, tenant.organization_id, f"api_key:{tenant.api_key_id}")
    return tenant


CurrentTenant = Annotated[Tenant, Depends(current_tenant)]
