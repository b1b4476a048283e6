"""The unit of work of a request: one session, committed before the response is sent, rolled
back when anything is raised (STYLE: services flush, never commit).

A family route (``http.routing``) runs its whole handler inside ``unit_of_work(request)``;
``SessionDep`` (``http.deps``) opens the session on first use. The session is committed when the
handler returns — so a failing commit is still an error response, never a response that claims
a write that did not happen — and rolled back on any exception, domain error or bug, before the
error is rendered (``http.errors``): a domain error raised after a write never leaves it behind.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from callplane.runtime import Runtime

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_SESSION = "callplane.session"
UNIT_OF_WORK = "callplane.unit_of_work"


async def get_session(request: Request) -> AsyncSession:
    """The request's session, opened on first use."""
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


def has_session(request: Request) -> bool:
    """Whether the request's session is open (a request may instead use a transaction of its
    own, ``callplane.kit.driver.pool_for``, but never both)."""
    return request.scope.get(_SESSION) is not None


async def end_unit_of_work(request: Request, *, commit: bool) -> None:
    """Commit (the handler succeeded) or roll back (it raised), then release the connection."""
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


@asynccontextmanager
async def unit_of_work(request: Request) -> AsyncIterator[None]:
    request.scope[UNIT_OF_WORK] = True
    try:
        yield
    except BaseException:
        await end_unit_of_work(request, commit=False)
        raise
    await end_unit_of_work(request, commit=True)
