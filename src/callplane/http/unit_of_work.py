"""The unit of work of a request: one session, committed before the response is sent, rolled
back when anything is raised (STYLE: services flush, never commit).

A family route (``http.routing``) runs its whole handler inside ``unit_of_work(request)``;
``SessionDep`` (``http.deps``) opens the session on first use. The session is committed when the
handler returns — so a failing commit is still an error response, never a response that claims
a write that did not happen — and rolled back on any exception, domain error or bug, before the
error is rendered (``http.errors``): a domain error raised after a write never leaves it behind.

A request whose work is one statement or two may instead run it in a transaction of its own
(``callplane.kit.driver.pool_for``: no session, no ORM), with the same guarantees: committed
before the response is sent, rolled back on anything raised (``one_transaction``,
``own_transaction``). A request uses one or the other, never both: on SQLite a session begun
IMMEDIATE would hold the write lock the other transaction waits for.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from callplane.audit.requests import is_audited, settle
from callplane.kit.driver import Db
from callplane.runtime import Runtime

T = TypeVar("T")

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
        # An audited read writes its event: on SQLite its transaction takes the write lock
        # from the start rather than upgrade to it (which could not wait for the lock).
        write = request.method not in _READ_METHODS or is_audited(request.scope)
        session = runtime.db.session(write=write)
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
            await settle(request.scope, session)
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


class Unsettled(enum.Enum):
    """What ``own_transaction`` returns when the work must be asked again on the session."""

    UNSETTLED = enum.auto()


UNSETTLED = Unsettled.UNSETTLED


async def own_transaction(
    request: Request,
    run: Callable[[Db], Awaitable[T]],
    *,
    write: bool,
    settled: Callable[[T], bool] | None = None,
    unsettled_by: tuple[type[BaseException], ...] = (),
) -> T | Unsettled:
    """``run`` in a transaction of its own, committed when it settles the request.

    ``UNSETTLED`` (nothing run, or everything rolled back) when there is no such transaction to
    be had (no pool for this database, or the request has opened its session already, e.g. to
    authenticate a key not cached yet), when ``run`` raised one of ``unsettled_by``, or when
    ``settled`` says its result is not the whole answer: the caller then asks the session, which
    sorts it out. Anything else raised is rolled back and goes on up."""
    runtime: Runtime = request.app.state.runtime
    pool = runtime.own_transactions
    if pool is None or has_session(request):
        return UNSETTLED
    # An audited read writes its event in this transaction (``get_session`` says why).
    write = write or is_audited(request.scope)
    own = await pool.begin(write=write)
    try:
        result = await run(own)
    except unsettled_by:
        await pool.end(own, commit=False)
        return UNSETTLED
    except BaseException:
        await pool.end(own, commit=False)
        raise
    if settled is not None and not settled(result):
        await pool.end(own, commit=False)
        return UNSETTLED
    if write:
        try:
            await settle(request.scope, own)
        except BaseException:
            await pool.end(own, commit=False)
            raise
    await pool.end(own, commit=True)
    return result


async def one_transaction(request: Request, run: Callable[[Db], Awaitable[T]], *, write: bool) -> T:
    """``run`` in a transaction of its own when one can be had, else on the request's session."""
    result = await own_transaction(request, run, write=write)
    if result is UNSETTLED:
        return await run(await get_session(request))
    return result
