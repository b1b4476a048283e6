"""Speech work's thread pools: bounded, and separate, so sentences waiting on a voice never hold
up a caller's turn being recognised."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from callplane.speech import executors


@pytest.mark.parametrize("kind", ["recognition", "synthesis"])
async def test_each_pool_is_bounded_and_runs_everything_given(kind: executors.Kind) -> None:
    size = executors.pool_size(kind)
    assert 1 <= size <= 4 * (os.cpu_count() or 1)
    lock = threading.Lock()
    running = {"now": 0, "most": 0}
    started = threading.Semaphore(0)
    release = threading.Event()

    def work(n: int) -> int:
        with lock:
            running["now"] += 1
            running["most"] = max(running["most"], running["now"])
        started.release()
        release.wait(60)
        with lock:
            running["now"] -= 1
        return n

    tasks = [asyncio.ensure_future(executors.run(kind, work, n)) for n in range(3 * size)]
    # Once the pool is full, let everything go.
    async with asyncio.timeout(60):
        for _ in range(size):
            await asyncio.to_thread(started.acquire)
    release.set()
    assert await asyncio.gather(*tasks) == list(range(3 * size))
    assert running["most"] == size


async def test_recognition_runs_while_every_synthesis_thread_waits() -> None:
    held = threading.Event()
    waiting = threading.Semaphore(0)

    def wait_for_voice() -> None:
        waiting.release()
        held.wait(60)

    size = executors.pool_size("synthesis")
    blocked = [
        asyncio.ensure_future(executors.run("synthesis", wait_for_voice)) for _ in range(size)
    ]
    try:
        async with asyncio.timeout(60):
            for _ in range(size):
                await asyncio.to_thread(waiting.acquire)
            name = await executors.run("recognition", lambda: threading.current_thread().name)
        assert name.startswith("recognition")
        assert not any(task.done() for task in blocked)
    finally:
        held.set()
        await asyncio.gather(*blocked)


async def test_context_variables_reach_the_thread() -> None:
    import contextvars

    turn: contextvars.ContextVar[str] = contextvars.ContextVar("turn")
    turn.set("turn 3")
    assert await executors.run("recognition", turn.get) == "turn 3"
