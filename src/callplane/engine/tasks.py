"""The registry of worker tasks: every job a worker process runs besides holding calls.

A task is a ``WorkerTask``: a name and a coroutine function that runs until the engine stops.
Most tasks are a step repeated when woken or after an interval, written with
``Engine.repeat``::

    async def _run(ctx: Engine) -> None:
        await ctx.repeat(my_step, wake_on=None, interval=5.0)

    MY_TASK = WorkerTask("my-task", _run)

Register it with one line in ``WORKER_TASKS`` (``"module:ATTRIBUTE"``, imported when a worker
starts, so this registry imports nothing itself).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from callplane.engine.worker import Engine


@dataclass(frozen=True)
class WorkerTask:
    name: str
    run: Callable[[Engine], Awaitable[None]]


WORKER_TASKS: tuple[str, ...] = (
    "callplane.engine.calls:DISPATCH",
    "callplane.engine.leases:LEASES",
    "callplane.webhooks.delivery:DELIVERY",
    "callplane.external_calls.transcription:TRANSCRIPTION",
)


def worker_tasks(names: tuple[str, ...] = WORKER_TASKS) -> list[WorkerTask]:
    tasks = []
    for name in names:
        module, _, attribute = name.partition(":")
        task = getattr(importlib.import_module(module), attribute)
        if not isinstance(task, WorkerTask):
            raise TypeError(f"{name} is not a WorkerTask")
        tasks.append(task)
    return tasks
