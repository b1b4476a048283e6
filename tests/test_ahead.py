"""``callplane.kit.ahead``: parts prepared by worker processes come back in order, whole, and only
the workers let go of the input."""

from __future__ import annotations

import os
import time

import pytest

from callplane.kit import ahead as ahead_module
from callplane.kit.ahead import ahead, workers

ITEMS = list(range(12))


def _slow_first(start: int) -> tuple[int, int]:
    # Earlier parts take longer, so with several workers the later ones are done first.
    time.sleep(0.05 * (len(ITEMS) - start) / len(ITEMS))
    return os.getpid(), sum(ITEMS[start : start + 2])


async def _collect(prepare, *, in_worker: bool, release=None) -> list[tuple[int, object]]:
    options = {"release": release} if release else {}
    async with ahead(prepare, range(0, len(ITEMS), 2), in_worker=in_worker, **options) as parts:
        return [part async for part in parts]


@pytest.mark.parametrize("in_worker", [True, False], ids=["workers", "in_process"])
async def test_parts_come_back_in_order(in_worker, monkeypatch):
    monkeypatch.setattr(ahead_module, "workers", lambda: 3)
    parts = await _collect(_slow_first, in_worker=in_worker)
    assert [(start, total) for start, (_, total) in parts] == [
        (start, start + start + 1) for start in range(0, 12, 2)
    ]
    pids = {pid for _, (pid, _) in parts}
    assert (os.getpid() not in pids) if in_worker else (pids == {os.getpid()})


def _forget(start: int) -> None:
    ITEMS[start : start + 2] = [None, None]


async def test_only_the_workers_let_go_of_the_input():
    parts = await _collect(_slow_first, in_worker=True, release=_forget)
    assert [total for _, (_, total) in parts] == [1, 5, 9, 13, 17, 21]
    assert list(range(12)) == ITEMS


def _fails_at_four(start: int) -> int:
    if start == 4:
        raise ValueError("part 4")
    return start


async def test_a_failed_part_fails_the_whole_after_the_parts_before_it():
    seen: list[int] = []
    with pytest.raises(ValueError, match="part 4"):
        async with ahead(_fails_at_four, range(0, 12, 2), in_worker=True) as parts:
            async for start, _ in parts:
                seen.append(start)
    assert seen == [0, 2]


def test_one_worker_per_available_core_within_the_bound():
    cores = len(os.sched_getaffinity(0))
    assert workers() == max(1, min(ahead_module.MAX_WORKERS, cores))
