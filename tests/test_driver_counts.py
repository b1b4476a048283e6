"""A SQLite connection of its own answers an exact count again only while the database is the
same (``driver._Sqlite.count``): every way the count can change makes it count again."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy import Column, Integer, MetaData, Table, bindparam, func, select, text
from sqlalchemy.dialects import sqlite

from callplane.kit.driver import Prepared, SqlitePool
from tests.conftest import BACKEND

pytestmark = pytest.mark.skipif(BACKEND != "sqlite", reason="SQLite's own-transaction pool")

_TABLE = Table("t", MetaData(), Column("k", Integer))
_DIALECT = sqlite.dialect()
_COUNT = Prepared.compile(
    select(func.count()).select_from(_TABLE).where(_TABLE.c.k == bindparam("k")), _DIALECT
)


@pytest.fixture
async def pool(tmp_path):
    path = str(tmp_path / "counts.db")
    setup = sqlite3.connect(path, isolation_level=None)
    setup.execute("PRAGMA journal_mode=WAL")
    setup.execute("CREATE TABLE t (k INTEGER)")
    setup.executemany("INSERT INTO t VALUES (?)", [(1,), (1,), (2,)])
    setup.close()
    made = SqlitePool(path, _DIALECT, busy_timeout_ms=1000, size=1)
    yield made, path
    await made.close()


async def _count(pool: SqlitePool, k: int = 1, statements: list[str] | None = None) -> int:
    connection = await pool.begin(write=False)
    if statements is not None:
        connection._conn.set_trace_callback(statements.append)  # type: ignore[attr-defined]
    try:
        return await connection.count(_COUNT, {"k": k})
    finally:
        connection._conn.set_trace_callback(None)  # type: ignore[attr-defined]
        await pool.end(connection, commit=True)


def _counted(statements: list[str]) -> int:
    return sum("count(*)" in statement for statement in statements)


async def test_a_count_is_answered_again_while_nothing_changed(pool):
    pool, _ = pool
    statements: list[str] = []
    assert await _count(pool, statements=statements) == 2
    assert await _count(pool, statements=statements) == 2
    assert _counted(statements) == 1
    assert await _count(pool, k=2, statements=statements) == 1  # other arguments: counted
    assert _counted(statements) == 2


async def test_another_connections_commit_makes_it_count_again(pool):
    pool, path = pool
    assert await _count(pool) == 2
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("INSERT INTO t VALUES (1)")
    other.close()
    assert await _count(pool) == 3


async def test_its_own_writes_committed_or_not_make_it_count_again(pool):
    pool, _ = pool
    assert await _count(pool) == 2
    writing = await pool.begin(write=True)
    writing._conn.execute("INSERT INTO t VALUES (1)")  # type: ignore[attr-defined]
    await pool.end(writing, commit=False)
    statements: list[str] = []
    assert await _count(pool, statements=statements) == 2
    assert _counted(statements) == 1
    writing = await pool.begin(write=True)
    writing._conn.execute("INSERT INTO t VALUES (1)")  # type: ignore[attr-defined]
    await pool.end(writing, commit=True)
    assert await _count(pool) == 3


async def test_a_count_inside_a_writing_transaction_is_never_kept(pool):
    pool, _ = pool
    writing = await pool.begin(write=True)
    writing._conn.execute("INSERT INTO t VALUES (1)")  # type: ignore[attr-defined]
    assert await writing.count(_COUNT, {"k": 1}) == 3
    await pool.end(writing, commit=False)
    assert await _count(pool) == 2


async def test_every_sqlite_connection_is_tuned_alike(pool):
    """The session's connections and the pool's own carry the same settings (one function,
    ``kit.db.tune_sqlite_connection``), the write-ahead log's checkpoint threshold included."""
    from callplane.kit.db import SQLITE_WAL_AUTOCHECKPOINT_PAGES, Database

    pool, path = pool
    own = await pool.begin(write=False)
    pragmas = ("journal_mode", "synchronous", "wal_autocheckpoint", "foreign_keys")
    seen = {name: own._conn.execute(f"PRAGMA {name}").fetchone()[0] for name in pragmas}  # type: ignore[attr-defined]
    await pool.end(own, commit=False)
    assert seen == {
        "journal_mode": "wal",
        "synchronous": 1,
        "wal_autocheckpoint": SQLITE_WAL_AUTOCHECKPOINT_PAGES,
        "foreign_keys": 1,
    }
    db = Database(f"sqlite:///{path}", pool_size=1)
    try:
        async with db.session(write=False) as session:
            for name, value in seen.items():
                found = (await session.execute(text(f"PRAGMA {name}"))).scalar()
                assert found == value, name
    finally:
        await db.dispose()
