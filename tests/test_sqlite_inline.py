"""SQLite runs inline on the event loop; a writer waiting for the lock must not stall it."""

from __future__ import annotations

import asyncio
import sqlite3
import types
from typing import Any

import pytest
from sqlalchemy.dialects import sqlite

from callplane.kit import sqlite_inline
from callplane.kit.driver import SqlitePool
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
    """A waiter retries at every turn of the loop for 2 ms (a request holds the lock well under
    a millisecond, and only one writer per process retries), then every millisecond, and backs
    off to 20 ms once the wait has lasted 0.1 s (a migration, an import)."""
    path = str(tmp_path / "lock.db")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA journal_mode=WAL")
    waiter = sqlite3.connect(path, isolation_level=None)
    clock = [1000.0]
    pauses: list[float] = []
    waited_before: list[float] = []  # how long the waiter had waited at each pause

    class Clock:
        @staticmethod
        def monotonic() -> float:
            return clock[0]

    async def sleep(pause: float) -> None:
        pauses.append(pause)
        waited_before.append(clock[0] - 1000.0)
        clock[0] += pause or 0.0001  # a turn of the event loop takes time too
        if clock[0] > 1000.3:
            holder.execute("COMMIT")  # the long hold ends

    monkeypatch.setattr(sqlite_inline, "time", Clock)
    loop_module = types.SimpleNamespace(sleep=sleep, current_task=asyncio.current_task)
    monkeypatch.setattr(sqlite_inline, "asyncio", loop_module)
    holder.execute("BEGIN IMMEDIATE")
    try:
        await sqlite_inline.begin_immediate(waiter, 5000, path=path)
        assert waiter.in_transaction  # it got the lock once the holder let go
        waiter.execute("ROLLBACK")
    finally:
        sqlite_inline.released(waiter)
        waiter.close()
        holder.close()
    waited = list(zip(pauses, waited_before, strict=True))
    spun = [pause for pause, at in waited if at < 0.002]
    short = [pause for pause, at in waited if 0.002 <= at <= 0.1]
    long = [pause for pause, at in waited if at > 0.1]
    assert set(spun) == {0}  # a hold as short as a request's: retried at every turn of the loop
    assert set(short) == {0.001}  # then every millisecond, the shortest timer uvloop keeps
    assert long and max(long) == 0.02 and long == sorted(long)  # then backing off


async def test_one_writer_per_process_retries_while_another_process_holds_the_lock(
    tmp_path, monkeypatch
):
    """The rest wait at the process's gate and are woken, in turn, as each writer commits."""
    path = str(tmp_path / "gate.db")
    holder = sqlite3.connect(path, isolation_level=None)  # another process's writer
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("CREATE TABLE t (n INTEGER)")
    retried_by: set[asyncio.Task[object] | None] = set()
    real_sleep = asyncio.sleep

    async def sleep(pause: float) -> None:
        retried_by.add(asyncio.current_task())
        await real_sleep(pause)

    monkeypatch.setattr(sqlite_inline.asyncio, "sleep", sleep)
    committed: list[int] = []

    async def write(n: int) -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            await sqlite_inline.begin_immediate(conn, 5000, path=path)
            conn.execute("INSERT INTO t VALUES (?)", (n,))
            await real_sleep(0)  # other tasks run while the transaction is open
            conn.commit()
            committed.append(n)
        finally:
            sqlite_inline.released(conn)
            conn.close()

    holder.execute("BEGIN IMMEDIATE")
    writers = [asyncio.create_task(write(n)) for n in range(8)]
    await real_sleep(0.05)
    assert committed == [] and len(retried_by) == 1  # one retries, seven wait at the gate
    holder.execute("COMMIT")
    await asyncio.wait_for(asyncio.gather(*writers), 5)
    holder.close()
    assert sorted(committed) == list(range(8))
    check = sqlite3.connect(path)
    assert check.execute("SELECT count(*) FROM t").fetchone() == (8,)
    check.close()


async def test_writers_waiting_for_their_turn_hold_no_connection(tmp_path, monkeypatch):
    """A pool keeps ten idle connections: writers queued behind another process's lock take
    theirs only when their turn comes, so a queue longer than the pool opens none beyond it."""
    path = str(tmp_path / "turns.db")
    holder = sqlite3.connect(path, isolation_level=None)  # another process's writer
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("CREATE TABLE t (n INTEGER)")
    pool = SqlitePool(path, sqlite.dialect(), busy_timeout_ms=5000, size=10)
    opened = 0
    real_open = pool._open

    def counting_open() -> Any:
        nonlocal opened
        opened += 1
        return real_open()

    monkeypatch.setattr(pool, "_open", counting_open)

    async def write(n: int) -> None:
        connection = await pool.begin(write=True)
        connection._conn.execute("INSERT INTO t VALUES (?)", (n,))  # type: ignore[attr-defined]
        await pool.end(connection, commit=True)

    holder.execute("BEGIN IMMEDIATE")
    writers = [asyncio.create_task(write(n)) for n in range(30)]
    await asyncio.sleep(0.05)
    assert opened == 1  # the one whose turn it is, retrying; 29 wait with none
    holder.execute("COMMIT")
    await asyncio.wait_for(asyncio.gather(*writers), 5)
    holder.close()
    await pool.close()
    assert opened == 1  # each writer in turn took the connection the one before gave back
    check = sqlite3.connect(path)
    assert check.execute("SELECT count(*) FROM t").fetchone() == (30,)
    check.close()
