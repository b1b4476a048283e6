"""SQLite runs inline on the event loop; a writer waiting for the lock must not stall it."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import types

import pytest

from callplane.kit import sqlite_inline
from tests.conftest import BACKEND, client_for
from tests.factories import make_org

pytestmark = pytest.mark.skipif(BACKEND != "sqlite", reason="SQLite's driver only")


async def test_a_writer_waits_for_the_lock_without_blocking_reads(app, database_url):
    org = await make_org(app)
    holder = sqlite3.connect(database_url.removeprefix("sqlite:///"), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds SQLite's write lock
    try:
        async with client_for(app) as c:
            write = asyncio.create_task(
                c.post("/v1/call_tags", headers=org.headers, json={"name": "queued"})
            )
            await asyncio.sleep(0.05)
            assert not write.done()  # waiting for the lock...
            read = await asyncio.wait_for(c.get("/v1/call_tags", headers=org.headers), 2)
            assert read.status_code == 200  # ...while reads are served
            holder.execute("COMMIT")
            response = await asyncio.wait_for(write, 5)
        assert response.status_code == 201
    finally:
        holder.close()


async def test_a_writer_gives_up_after_the_lock_wait(app, database_url, monkeypatch):
    org = await make_org(app)
    monkeypatch.setattr(sqlite_inline, "LOCK_WAIT_SECONDS", 0.2)
    holder = sqlite3.connect(database_url.removeprefix("sqlite:///"), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        async with client_for(app) as c:
            response = await c.post("/v1/call_tags", headers=org.headers, json={"name": "late"})
        assert response.status_code == 503  # never hanging; the client is told to retry
        assert response.headers["retry-after"] == "1"
        assert set(response.json()) == {"detail"}  # the call tags family's shape
    finally:
        holder.execute("ROLLBACK")
        holder.close()


async def test_concurrent_writers_all_succeed(make_app):
    first, second = await make_app(), await make_app()
    org = await make_org(first)
    async with client_for(first) as a, client_for(second) as b:
        responses = await asyncio.gather(
            *(
                client.post("/v1/call_tags", headers=org.headers, json={"name": f"t{i}"})
                for i, client in enumerate([a, b] * 15)
            )
        )
    assert [r.status_code for r in responses] == [201] * 30


async def test_a_waiter_retries_often_at_first_and_backs_off_on_a_long_wait(tmp_path, monkeypatch):
    """Pauses stop growing at 2 ms while the wait is short (a transaction holds the lock well
    under a millisecond), and grow to 20 ms once it has lasted 0.1 s (a migration, an import),
    so many waiters do not spin through a long hold."""
    path = str(tmp_path / "lock.db")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA journal_mode=WAL")
    waiter = sqlite3.connect(path, isolation_level=None)
    clock = [1000.0]
    pauses: list[float] = []

    class Clock:
        @staticmethod
        def monotonic() -> float:
            return clock[0]

    async def sleep(pause: float) -> None:
        pauses.append(pause)
        clock[0] += pause
        if clock[0] > 1000.3:
            holder.execute("COMMIT")  # the long hold ends

    monkeypatch.setattr(sqlite_inline, "time", Clock)
    loop_module = types.SimpleNamespace(sleep=sleep, current_task=asyncio.current_task)
    monkeypatch.setattr(sqlite_inline, "asyncio", loop_module)
    holder.execute("BEGIN IMMEDIATE")
    try:
        await sqlite_inline.begin_immediate(waiter, 5000)
        assert waiter.in_transaction  # it got the lock once the holder let go
        waiter.execute("ROLLBACK")
    finally:
        sqlite_inline.released(waiter)
        waiter.close()
        holder.close()
    # The time waited before each pause (and, last and unused, in all).
    waited_before = itertools.accumulate(pauses, initial=0.0)
    short = [pause for pause, at in zip(pauses, waited_before, strict=False) if at <= 0.1]
    long = pauses[len(short) :]
    assert short[:3] == [0.0005, 0.001, 0.002]
    assert set(short[2:]) == {0.002}  # many quick retries while the wait is short
    assert long and max(long) == 0.02 and long == sorted(long)  # then backing off
