"""A process's SQLite writers take turns at a gate: woken when it is free, never left idle."""

from __future__ import annotations

import asyncio
import time

import pytest

from callplane.kit.write_gate import WriteGate, WriteGateTimeout


def _far() -> float:
    return time.monotonic() + 5


async def test_a_free_gate_is_taken_without_waiting_and_a_waiter_is_woken_when_it_is_left():
    gate = WriteGate()
    await gate.enter(_far())
    assert gate.held
    waiter = asyncio.create_task(gate.enter(_far()))
    await asyncio.sleep(0.01)
    assert not waiter.done()
    gate.leave()
    await asyncio.wait_for(waiter, 1)
    assert gate.held


async def test_a_writer_arriving_as_the_gate_is_left_takes_it_and_the_woken_one_stays_first():
    """No hand-off: the gate is never idle while a woken waiter has yet to run. The woken
    waiter then waits ahead of those who came after it."""
    gate = WriteGate()
    order: list[str] = []

    async def writer(name: str) -> None:
        await gate.enter(_far())
        order.append(name)
        await asyncio.sleep(0.01)
        gate.leave()

    await gate.enter(_far())
    first = asyncio.create_task(writer("first in line"))
    await asyncio.sleep(0)
    second = asyncio.create_task(writer("second in line"))
    await asyncio.sleep(0)
    gate.leave()
    await gate.enter(_far())  # arrives as the gate is left: takes it at once
    assert order == []
    await asyncio.sleep(0.01)
    gate.leave()
    await asyncio.wait_for(asyncio.gather(first, second), 1)
    assert order == ["first in line", "second in line"]
    assert not gate.held


async def test_a_waiter_gives_up_at_its_deadline_and_leaves_the_line():
    gate = WriteGate()
    await gate.enter(_far())
    with pytest.raises(WriteGateTimeout, match="database is locked"):
        await gate.enter(time.monotonic() + 0.02)
    behind = asyncio.create_task(gate.enter(_far()))
    await asyncio.sleep(0)
    gate.leave()
    await asyncio.wait_for(behind, 1)  # the wake-up went to the one still waiting
    assert gate.held


async def test_a_waiter_cancelled_after_being_woken_passes_the_turn_on():
    gate = WriteGate()
    await gate.enter(_far())
    woken = asyncio.create_task(gate.enter(_far()))
    await asyncio.sleep(0)
    behind = asyncio.create_task(gate.enter(_far()))
    await asyncio.sleep(0)
    gate.leave()  # wakes ``woken``...
    woken.cancel()  # ...which is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await woken
    await asyncio.wait_for(behind, 1)
    assert gate.held
