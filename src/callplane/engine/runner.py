"""What worker tasks run on (``jobs.TaskContext``): the process's runtime, its stop signal, the
repeat loop and the retried write transaction. Knows nothing of calls."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.jobs import TaskContext, WorkerTask
from callplane.kit import wakeups
from callplane.runtime import Runtime
from callplane.settings import Settings

log = logging.getLogger("callplane.engine")

P = ParamSpec("P")
T = TypeVar("T")

#: Database hiccups a transaction is retried through (a restarting server, SQLite's lock
#: timeout).
_TRANSIENT = (OperationalError, DBAPIError, OSError)
_TRANSACT_ATTEMPTS = 4
#: Transactions in flight at once. Hundreds of calls would otherwise each take a connection,
#: and every connection past the pool is opened and closed again (a PostgreSQL backend forked
#: per move).
MOVES_AT_ONCE = 8


class TaskRunner:
    """One per worker process; satisfies ``TaskContext``."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.stopping = asyncio.Event()
        self._moves = asyncio.Semaphore(MOVES_AT_ONCE)

    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    async def supervise(self, task: WorkerTask) -> None:
        """Run a task until the worker stops, restarting it when it crashes."""
        while not self.stopping.is_set():
            try:
                await task.run(self)
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("worker task crashed; restarting", extra={"task": task.name})
                await self.sleep(1.0)

    async def sleep(self, seconds: float) -> None:
        """Sleep, or less when the worker stops."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), seconds)

    async def repeat(
        self,
        step: Callable[[TaskContext], Awaitable[bool]],
        *,
        interval: float,
        wake_on: str | None = None,
    ) -> None:
        flag = wakeups.waiter(wake_on) if wake_on else None
        stopping = asyncio.ensure_future(self.stopping.wait())
        try:
            while not self.stopping.is_set():
                if flag is not None:
                    flag.clear()
                try:
                    more = await step(self)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("worker step failed", extra={"step": step.__qualname__})
                    more = False
                if more:
                    await asyncio.sleep(0)
                    continue
                waits: list[asyncio.Future[Any]] = [stopping]
                if flag is not None:
                    waits.append(asyncio.ensure_future(flag.wait()))
                try:
                    await asyncio.wait(waits, timeout=interval, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for waiting in waits[1:]:
                        waiting.cancel()
        finally:
            stopping.cancel()
            if flag is not None and wake_on is not None:
                wakeups.local.unsubscribe(wake_on, flag)

    async def transact(
        self,
        work: Callable[Concatenate[AsyncSession, Runtime, P], Awaitable[T]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        for attempt in range(_TRANSACT_ATTEMPTS):
            try:
                async with self._moves, self.runtime.db.session(write=True) as session:
                    result = await work(session, self.runtime, *args, **kwargs)
                    await session.commit()
                    return result
            except _TRANSIENT:
                if attempt == _TRANSACT_ATTEMPTS - 1:
                    raise
                log.warning("database error in the engine; retrying", exc_info=True)
                await asyncio.sleep(0.2 * 2**attempt)
        raise AssertionError("unreachable")
