"""Work on a large input prepared ahead, in worker processes, while this process writes.

A bulk import spends longer validating and encoding each item (pure Python, holding the GIL)
than the database spends storing it. A thread cannot overlap the two: the writer would wait for
the GIL after every row. Forked processes can: they inherit the parsed input without copying it
up front, prepare parts (one per core, ``workers``) and send each back pickled; this process
takes them in order and writes. At most ``LOOKAHEAD`` parts a worker wait, so memory stays that
of a few parts.

``prepare`` must be a pure function of the part's start (it runs in a worker, which holds no
database connection) and return something picklable. Fork is what makes a closure over the
parsed input usable there; where fork is unavailable, or for one part, everything runs here.

Fork shares the input's pages until they are written, and reading an object writes its reference
count: a worker copies each page of input it reads. ``release(start)``, run in the worker after
a part, drops the worker's references to that part's input, so those copies are freed and reused
for the next part instead of adding up to a second copy of the input.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import multiprocessing
import os
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

#: Parts prepared or being prepared beyond the one being written, per worker.
LOOKAHEAD = 2
#: Workers at most: preparing is the slower side, but the writer needs a core of its own too.
MAX_WORKERS = 4

#: The preparation and release of the running ``ahead``: set before the worker forks, which
#: inherits them.
_job: tuple[Callable[[int], Any], Callable[[int], None]] | None = None


def _run(start: int) -> Any:
    assert _job is not None
    prepare, release = _job
    try:
        return prepare(start)
    finally:
        release(start)


def _keep(start: int) -> None:
    pass


def workers() -> int:
    """Worker processes for this machine: one per core available to this process, within
    ``MAX_WORKERS``. With two cores, two workers and the writer share them: measured for a
    300,000-call import, the writer waited for a single worker a third of the time."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(MAX_WORKERS, cores or 1))


def _worker_init() -> None:
    # Preparation makes no reference cycles; collections would only rescan the inherited input
    # (and touch its pages, which fork otherwise leaves shared).
    gc.disable()


@contextlib.asynccontextmanager
async def ahead(
    prepare: Callable[[int], T],
    starts: Sequence[int],
    *,
    in_worker: bool,
    release: Callable[[int], None] = _keep,
) -> AsyncIterator[AsyncIterator[tuple[int, T]]]:
    """``(start, prepare(start))`` for each start, in order; in worker processes if asked."""
    if not in_worker or "fork" not in multiprocessing.get_all_start_methods():
        yield ((start, prepare(start)) async for start in _each(starts))
        return
    global _job
    if _job is not None:
        raise RuntimeError("one preparation at a time per process")
    _job = (prepare, release)
    try:
        count = workers()
        with multiprocessing.get_context("fork").Pool(count, initializer=_worker_init) as pool:
            yield _in_order(pool, starts, ahead=count * LOOKAHEAD)
    finally:
        _job = None


async def _each(starts: Sequence[int]) -> AsyncIterator[int]:
    for start in starts:
        yield start


async def _in_order(pool: Any, starts: Sequence[int], ahead: int) -> AsyncIterator[tuple[int, Any]]:
    loop = asyncio.get_running_loop()
    waiting: deque[tuple[int, asyncio.Future[Any]]] = deque()
    upcoming = iter(starts)

    def submit() -> None:
        start = next(upcoming, None)
        if start is None:
            return
        future: asyncio.Future[Any] = loop.create_future()

        def settle(outcome: Any, failed: bool = False) -> None:
            if future.done():
                return
            if failed:
                future.set_exception(outcome)
            else:
                future.set_result(outcome)

        # The callbacks run on the pool's result thread.
        pool.apply_async(
            _run,
            (start,),
            callback=lambda result: loop.call_soon_threadsafe(settle, result),
            error_callback=lambda exc: loop.call_soon_threadsafe(settle, exc, True),
        )
        waiting.append((start, future))

    for _ in range(1 + ahead):
        submit()
    while waiting:
        start, future = waiting.popleft()
        result = await future
        submit()
        yield start, result
