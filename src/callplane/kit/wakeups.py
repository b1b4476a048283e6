"""Prompt wake-ups of the engine's queues, without polling hard (docs/engine-core.md).

A change that gives a worker something to do (a call enqueued, a webhook event written, a call
slot freed) ``announce``s a channel in its transaction. On PostgreSQL that is a ``pg_notify``,
delivered to every listening worker when the transaction commits; in-process waiters (the
engine embedded in ``serve``, on either database) are woken by an after-commit hook. A rolled
back transaction wakes nobody. Workers still poll at ``CALLPLANE_WORKER_POLL_SECONDS`` so a
missed notification only delays work, never loses it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from sqlalchemy import event, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

CALLS = "callplane_calls"
WEBHOOKS = "callplane_webhooks"
#: A recording leg was uploaded (external_calls.transcription).
RECORDINGS = "callplane_recordings"
#: An agent test run or replay was asked for (agent_tests.task).
AGENT_RUNS = "callplane_agent_runs"
CHANNELS = (CALLS, WEBHOOKS, RECORDINGS, AGENT_RUNS)

_PENDING = "callplane.kit.wakeups"


class LocalWakeups:
    """In-process waiters by channel: each waiter has its own event, so none steals another's."""

    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Event]] = {}

    def subscribe(self, channel: str) -> asyncio.Event:
        flag = asyncio.Event()
        self._waiters.setdefault(channel, set()).add(flag)
        return flag

    def unsubscribe(self, channel: str, flag: asyncio.Event) -> None:
        self._waiters.get(channel, set()).discard(flag)

    def wake(self, channel: str) -> None:
        for flag in tuple(self._waiters.get(channel, ())):
            # Waiters may live on another event loop (tests run several apps); setting an event
            # there is only safe through that loop.
            loop = getattr(flag, "_callplane_loop", None)
            if loop is None or _running_loop() is loop:
                flag.set()
            elif not loop.is_closed():
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(flag.set)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


#: The process's waiters (one per process, like the database pools' event loop).
local = LocalWakeups()


async def announce(session: AsyncSession, channel: str) -> None:
    """Wake the workers of ``channel`` once this transaction commits."""
    pending: set[str] = session.sync_session.info.setdefault(_PENDING, set())
    if channel in pending:
        return
    pending.add(channel)
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(select(func.pg_notify(channel, "")))


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    for channel in session.info.pop(_PENDING, ()):
        local.wake(channel)


@event.listens_for(Session, "after_soft_rollback")
def _after_rollback(session: Session, _previous: Any) -> None:
    session.info.pop(_PENDING, None)


def waiter(channel: str) -> asyncio.Event:
    """An event set whenever ``channel`` is announced in this process (or by NOTIFY)."""
    flag = local.subscribe(channel)
    flag._callplane_loop = asyncio.get_running_loop()  # type: ignore[attr-defined]
    return flag
