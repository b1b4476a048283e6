"""Worker tasks, as every domain writes them: below every domain, above nothing but settings.

A domain that runs work on the workers (webhook delivery, transcription of recordings, the
engine's own dispatch and leases) declares a ``WorkerTask`` and types it against
``TaskContext``: only what tasks use, so no domain imports the engine that runs them (the
engine's ``tasks.py`` imports the tasks; never the other way round). Most tasks are a step
repeated when woken or after an interval::

    async def _run(ctx: TaskContext) -> None:
        await ctx.repeat(my_step, wake_on=None, interval=5.0)

    MY_TASK = WorkerTask("my-task", _run)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Concatenate, ParamSpec, Protocol, TypeVar

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from callplane.runtime import Runtime
    from callplane.settings import Settings

P = ParamSpec("P")
T = TypeVar("T")


class TaskContext(Protocol):
    """What a worker task may use of the process running it."""

    @property
    def settings(self) -> Settings: ...

    @property
    def runtime(self) -> Runtime: ...

    @property
    def stopping(self) -> asyncio.Event:
        """Set when the worker stops: a task returns soon after."""
        ...

    async def repeat(
        self,
        step: Callable[[TaskContext], Awaitable[bool]],
        *,
        interval: float,
        wake_on: str | None = None,
    ) -> None:
        """Run ``step`` until the worker stops: again at once while it returns True (more work
        waiting), else after ``interval`` or when ``wake_on`` is announced (``kit.wakeups``)."""
        ...

    async def transact(
        self,
        work: Callable[Concatenate[AsyncSession, Runtime, P], Awaitable[T]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """``work(session, runtime, ...)`` in one committed write transaction, retried through
        transient database errors."""
        ...


@dataclass(frozen=True)
class WorkerTask:
    """A job a worker process runs until it stops (restarted when it crashes)."""

    name: str
    run: Callable[[TaskContext], Awaitable[None]]
