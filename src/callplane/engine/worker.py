"""The engine of one worker process: its identity, its calls, its tasks, its shutdown.

``Engine(runtime)`` is started by ``callplane worker`` or inside ``serve`` (``embedded.py``).
It runs every registered worker task (``tasks.py``) and holds the calls it placed or answered.
Stopping is graceful: no new call is claimed, calls in progress may finish for up to
CALLPLANE_WORKER_GRACE_SECONDS (leases keep being renewed meanwhile), then the rest are hung up
and completed, and the tasks end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.engine.batching import GroupCommit
from callplane.engine.conversation import ConversationServices, build_services
from callplane.engine.lifecycle import CallRef
from callplane.engine.tasks import WORKER_TASKS, WorkerTask, worker_tasks
from callplane.kit import wakeups
from callplane.kit.db import async_url
from callplane.observability.logcontext import call_context
from callplane.observability.tracing import traced_call
from callplane.runtime import Runtime
from callplane.telephony.base import TelephonyAdapter

log = logging.getLogger("callplane.engine")

P = ParamSpec("P")
T = TypeVar("T")

#: Database hiccups a move is retried through (a restarting server, SQLite's lock timeout).
_TRANSIENT = (OperationalError, DBAPIError, OSError)
_TRANSACT_ATTEMPTS = 4
#: Moves in flight at once. Hundreds of calls would otherwise each take a connection, and every
#: connection past the pool is opened and closed again (a PostgreSQL backend forked per move).
MOVES_AT_ONCE = 8


def new_worker_id() -> str:
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(3)}"


def build_adapter(runtime: Runtime) -> TelephonyAdapter:
    """The phone network named by CALLPLANE_TELEPHONY."""
    settings = runtime.settings
    if settings.telephony == "sip":
        import importlib

        sip = importlib.import_module("callplane.telephony.sip")
        adapter: TelephonyAdapter = sip.build_adapter(settings)
        return adapter
    from callplane.telephony.simulated import SimulatedTelephony

    return SimulatedTelephony(settings.simulated_call_seconds, settings.simulated_script)


class Engine:
    def __init__(
        self,
        runtime: Runtime,
        *,
        concurrency: int | None = None,
        adapter: TelephonyAdapter | None = None,
        tasks: tuple[str, ...] = WORKER_TASKS,
        worker_id: str | None = None,
    ) -> None:
        self.runtime = runtime
        self.settings = runtime.settings
        self.worker_id = worker_id or new_worker_id()
        self.concurrency = concurrency or self.settings.worker_concurrency
        self.adapter = adapter or build_adapter(runtime)
        self.services: ConversationServices = build_services(runtime)
        #: Calls this worker holds (their leases are renewed) and the tasks holding them.
        self.held: set[CallRef] = set()
        self.calls: set[asyncio.Task[Any]] = set()
        #: Set once stopping begins: no new call is claimed or answered.
        self.draining = False
        self.stopping = asyncio.Event()
        self._task_names = tasks
        self._loops: list[asyncio.Task[None]] = []
        self._listener: Any = None
        self._started = False
        self._moves = asyncio.Semaphore(MOVES_AT_ONCE)
        #: The calls' moves go through it (one transaction for many calls).
        self.moves = GroupCommit(self)
        self.services.moves = self.moves

    # -- running ---------------------------------------------------------------------------

    async def start(self) -> None:
        from callplane.engine.calls import inbound_router

        tasks = worker_tasks(self._task_names)
        await self.adapter.start(inbound_router(self))
        self.moves.start()
        if self.runtime.db.backend == "postgresql":
            await self._listen()
        for task in tasks:
            self._loops.append(asyncio.create_task(self._supervise(task), name=task.name))
        self._started = True
        log.info(
            "engine started",
            extra={"worker_id": self.worker_id, "tasks": [t.name for t in tasks]},
        )

    async def _supervise(self, task: WorkerTask) -> None:
        while not self.stopping.is_set():
            try:
                await task.run(self)
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("worker task crashed; restarting", extra={"task": task.name})
                await self.sleep(1.0)

    async def _listen(self) -> None:
        """LISTEN on the wake-up channels: PostgreSQL's NOTIFY wakes this worker at once."""
        import asyncpg

        dsn = async_url(self.runtime.db.url).replace("postgresql+asyncpg://", "postgresql://", 1)
        try:
            self._listener = await asyncpg.connect(dsn)
            for channel in wakeups.CHANNELS:
                await self._listener.add_listener(
                    channel, lambda _c, _p, ch, _m: wakeups.local.wake(ch)
                )
        except (OSError, asyncpg.PostgresError):
            log.warning("LISTEN unavailable; polling only", exc_info=True)
            self._listener = None

    async def sleep(self, seconds: float) -> None:
        """Sleep, or less when the engine stops."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), seconds)

    async def repeat(
        self,
        step: Callable[[Engine], Awaitable[bool]],
        *,
        interval: float,
        wake_on: str | None = None,
    ) -> None:
        """Run ``step`` until the engine stops: again at once while it returns True (more work
        waiting), else after ``interval`` or when ``wake_on`` is announced."""
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
        """Run ``work(session, runtime, ...)`` in one committed write transaction, retried
        through transient database errors."""
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

    def hold(self, ref: CallRef, call: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run a call's coroutine as a task of this worker; its lease is renewed meanwhile."""
        self.held.add(ref)
        task = asyncio.create_task(
            traced_call(ref.call_id, call),
            name=f"call-{ref.call_id}",
            context=call_context(ref.organization_id, ref.call_id),  # issue 29: log fields
        )
        self.calls.add(task)

        def done(finished: asyncio.Task[None]) -> None:
            self.calls.discard(finished)
            self.held.discard(ref)
            wakeups.local.wake(wakeups.CALLS)  # a slot is free
            if not finished.cancelled() and finished.exception() is not None:
                log.error(
                    "call task failed",
                    exc_info=finished.exception(),
                    extra={"call_id": str(ref.call_id)},
                )

        task.add_done_callback(done)
        return task

    # -- stopping --------------------------------------------------------------------------

    async def stop(self, grace: float | None = None) -> None:
        """Stop claiming; let calls finish for ``grace`` seconds; hang up the rest; stop."""
        if not self._started:
            return
        self._started = False
        self.draining = True
        grace = self.settings.worker_grace_seconds if grace is None else grace
        with contextlib.suppress(Exception):
            await self.adapter.stop()
        if self.calls:
            log.info(
                "waiting for calls in progress",
                extra={"calls": len(self.calls), "grace_seconds": grace},
            )
            await asyncio.wait(set(self.calls), timeout=grace)
        for task in list(self.calls):
            task.cancel()
        if self.calls:
            await asyncio.wait(set(self.calls), timeout=10)
        self.stopping.set()
        for loop in self._loops:
            loop.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        self._loops.clear()
        await self.moves.stop()
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.close()
            self._listener = None
        await self.services.aclose()
        log.info("engine stopped", extra={"worker_id": self.worker_id})
