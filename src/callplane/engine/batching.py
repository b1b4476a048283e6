"""Group commit: the moves of many calls, made in one transaction.

Every call a worker holds moves a few times (answered, completed, analyzed), each move a small
UPDATE and an event; committed one by one, a busy worker spends its time waiting for commits
(each one a WAL flush on PostgreSQL) and in per-statement overhead. ``GroupCommit.apply(request)``
queues the move and waits; a flusher takes whatever is queued (up to ``BATCH``) and makes it with
``lifecycle.apply_moves`` in one transaction, while the next moves queue up behind it. An idle
worker's lone move goes at once: nothing waits for a batch to fill.

``make`` makes a list of moves in one committed transaction (``lifecycle.apply_moves`` through
the worker's ``transact``): the group commit knows nothing else of the worker.

A batch that fails for a reason other than a transient database error is retried one move at a
time, so one bad move fails alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from callplane.engine.lifecycle import MoveRequest
from callplane.models.calls import Call

log = logging.getLogger("callplane.engine.batching")

#: Moves per transaction at most.
BATCH = 200
#: Transactions in flight at once: one is written while the next batch gathers.
FLUSHES_AT_ONCE = 2


@dataclass
class _Queued:
    request: MoveRequest
    done: asyncio.Future[Call | None]


#: Makes moves in one committed transaction; the calls as moved (None: did not apply).
MakeMoves = Callable[[Sequence[MoveRequest]], Awaitable[Sequence[Call | None]]]


class GroupCommit:
    def __init__(self, make: MakeMoves) -> None:
        self._make_moves = make
        self._queue: list[_Queued] = []
        self._wake = asyncio.Event()
        self._slots = asyncio.Semaphore(FLUSHES_AT_ONCE)
        self._flushes: set[asyncio.Task[None]] = set()
        self._runner: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._runner = asyncio.create_task(self._run(), name="group-commit")

    async def stop(self) -> None:
        """After the calls have ended: the moves still queued are made, then it stops."""
        if self._runner is None:
            return
        while self._queue or self._flushes:
            self._wake.set()
            await asyncio.sleep(0.01)
        self._runner.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._runner
        self._runner = None

    async def apply(self, request: MoveRequest) -> Call | None:
        """Make the move; the call as moved, or None when it did not apply."""
        if self._runner is None:  # not started (an engine used without start, in tests)
            [call] = await self._make_moves([request])
            return call
        done: asyncio.Future[Call | None] = asyncio.get_running_loop().create_future()
        self._queue.append(_Queued(request, done))
        self._wake.set()
        return await done

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                await self._slots.acquire()
                batch, self._queue = self._queue[:BATCH], self._queue[BATCH:]
                task = asyncio.create_task(self._flush(batch))
                self._flushes.add(task)
                task.add_done_callback(self._flushes.discard)

    async def _flush(self, batch: list[_Queued]) -> None:
        try:
            await self._make(batch)
        except BaseException:
            for queued in batch:  # nobody may wait forever on a move that was never made
                if not queued.done.done():
                    queued.done.cancel()
            raise
        finally:
            self._slots.release()

    async def _make(self, batch: list[_Queued]) -> None:
        try:
            calls = await self._make_moves([q.request for q in batch])
        except Exception as exc:
            if len(batch) > 1:
                log.warning("a batch of moves failed; making them one by one", exc_info=True)
                for queued in batch:
                    await self._make([queued])
                return
            if not batch[0].done.done():
                batch[0].done.set_exception(exc)
            return
        for queued, call in zip(batch, calls, strict=True):
            if not queued.done.done():
                queued.done.set_result(call)
