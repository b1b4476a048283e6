"""SQLite without a driver thread: stdlib ``sqlite3`` behind aiosqlite's async interface.

SQLAlchemy's aiosqlite dialect hands every statement to aiosqlite's worker thread and waits for
the event loop to be woken with the result: three or four thread hand-offs per request, which cost
far more than the statements themselves (a point query takes microseconds). The connections made
here have the same async surface but run each call inline on the event loop, as the fastest
SQLite servers do.

The one call that could hold the loop is waiting for another writer's lock. Write transactions
begin with ``BEGIN IMMEDIATE``; here that statement runs with a zero busy timeout and, while the
database is locked, is retried at each turn of the event loop, then after ``asyncio.sleep`` pauses
(growing on a long wait), so other requests keep being served meanwhile. In WAL mode nothing else
waits: readers never block, and a writer holding the write lock commits without waiting for
readers.

So writers wait only on one another, and each write transaction is short. Within one process
they take turns at a gate first (``callplane.kit.write_gate``): only the gate's holder retries
against writers of other processes. The one wait that can never end is a task opening a second
write transaction while its first still holds the lock (the first cannot commit until the second
begins): that is refused at once as a bug (``NestedWriteError``), instead of stalling the task,
and every writer behind it, until the lock wait gives up.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from callplane.kit.write_gate import WriteGate, WriteGateTimeout, gate_for

#: How long a writer waits for the write lock before giving up ("database is locked").
LOCK_WAIT_SECONDS = 10.0
#: Only one writer of each process retries (the others wait at its ``WriteGate``). Another
#: process's request holds the lock for well under a millisecond, so for ``_SPIN_SECONDS`` the
#: writer retries at every turn of the event loop: a waiter that slept longer left the lock idle
#: after it was free. A longer hold (a batch of sealing, a migration) is waited out with real
#: pauses, or the retries would take the CPU its holder needs: from ``_SHORT_WAIT_PAUSE``, the
#: shortest timer either event loop keeps (uvloop's timers count whole milliseconds, and
#: ``asyncio.sleep(0.0005)`` returns at once there), doubling to ``_LONGEST_PAUSE`` once the wait
#: has lasted ``_SHORT_WAIT_SECONDS``. Measured under wrk -c32 on custom-data PATCHes, two
#: servers side by side (``docs/internals.md``).
_SPIN_SECONDS = 0.002
_SHORT_WAIT_PAUSE = 0.001
_SHORT_WAIT_SECONDS = 0.1
_LONGEST_PAUSE = 0.02


class NestedWriteError(sqlite3.OperationalError):
    """A task began a write transaction while holding another one (see the module's doc)."""


#: The connection of the write transaction each task holds (until it commits or rolls back).
_writing: weakref.WeakKeyDictionary[asyncio.Task[Any], sqlite3.Connection] = (
    weakref.WeakKeyDictionary()
)
#: Which task began the write transaction open on a connection (by the connection's id).
_began_by: dict[int, asyncio.Task[Any]] = {}
#: The gate held by the write transaction open on a connection (by the connection's id).
_holding: dict[int, WriteGate] = {}


def _refuse_nested() -> None:
    task = asyncio.current_task()
    if task is None:
        return
    held = _writing.get(task)
    if held is not None and _began_by.get(id(held)) is task:
        try:
            nested = held.in_transaction
        except sqlite3.ProgrammingError:  # closed
            nested = False
        if nested:
            raise NestedWriteError(
                "a write transaction was begun while this task holds another one; "
                "commit the first, or do the work in it"
            )


def _register(conn: sqlite3.Connection) -> None:
    task = asyncio.current_task()
    if task is None:
        return
    _writing[task] = conn
    _began_by[id(conn)] = task


def released(conn: sqlite3.Connection) -> None:
    """The write transaction on ``conn`` ended (commit or rollback): its task holds none, and
    the next writer of this process may begin."""
    task = _began_by.pop(id(conn), None)
    if task is not None and _writing.get(task) is conn:
        del _writing[task]
    gate = _holding.pop(id(conn), None)
    if gate is not None:
        gate.leave()


def _is_locked(error: sqlite3.OperationalError) -> bool:
    message = str(error)
    return "locked" in message or "busy" in message


class _RunNow:
    """Stands in for aiosqlite's job queue, which SQLAlchemy uses to set ``isolation_level``."""

    def put_nowait(self, item: tuple[asyncio.Future[Any], Callable[[], Any]]) -> None:
        future, function = item
        try:
            future.set_result(function())
        except Exception as error:  # handed to the awaiting caller, as aiosqlite does
            future.set_exception(error)


class InlineCursor:
    def __init__(self, connection: InlineConnection) -> None:
        self._connection = connection
        self._cursor = connection._conn.cursor()

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    async def execute(self, sql: str, parameters: Sequence[Any] = ()) -> InlineCursor:
        if sql.startswith("BEGIN IMMEDIATE"):
            await self._connection._begin_immediate(self._cursor, sql)
        else:
            self._cursor.execute(sql, parameters)
        return self

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> InlineCursor:
        self._cursor.executemany(sql, rows)
        return self

    async def fetchone(self) -> Any:
        return self._cursor.fetchone()

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        return self._cursor.fetchmany(size if size is not None else self._cursor.arraysize)

    async def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    async def close(self) -> None:
        self._cursor.close()


class InlineConnection:
    """The subset of ``aiosqlite.Connection`` that SQLAlchemy's aiosqlite dialect uses."""

    def __init__(self, conn: sqlite3.Connection, busy_timeout_ms: int, path: str) -> None:
        self._conn = conn
        self._tx = _RunNow()
        self._busy_timeout_ms = busy_timeout_ms
        self._path = path

    @property
    def sqlite(self) -> sqlite3.Connection:
        """The sqlite3 connection itself (``callplane.kit.driver`` runs hot statements on it)."""
        return self._conn

    @property
    def isolation_level(self) -> str | None:
        return self._conn.isolation_level

    async def cursor(self) -> InlineCursor:
        return InlineCursor(self)

    async def execute(self, sql: str, parameters: Sequence[Any] = ()) -> InlineCursor:
        return await InlineCursor(self).execute(sql, parameters)

    async def commit(self) -> None:
        try:
            self._conn.commit()
        finally:
            released(self._conn)

    async def rollback(self) -> None:
        try:
            self._conn.rollback()
        finally:
            released(self._conn)

    async def close(self) -> None:
        released(self._conn)
        self._conn.close()

    def stop(self) -> None:
        released(self._conn)
        self._conn.close()

    async def create_function(self, *args: Any, **kwargs: Any) -> None:
        self._conn.create_function(*args, **kwargs)

    async def _begin_immediate(self, cursor: sqlite3.Cursor, sql: str) -> None:
        await begin_immediate(self._conn, self._busy_timeout_ms, sql, cursor, path=self._path)


async def take_write_turn(path: str) -> float:
    """Wait for this process's turn to write the database file ``path``, before taking a
    connection for it: writers queued at the gate hold none (a pool of ten would otherwise open
    and close connections while more than ten wait). The deadline the write's ``BEGIN`` keeps;
    ``begin_immediate(..., deadline=)`` then takes the turn, or ``leave_write_turn`` gives it up."""
    _refuse_nested()
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    try:
        await gate_for(path).enter(deadline)
    except WriteGateTimeout as error:
        raise sqlite3.OperationalError(str(error)) from None
    return deadline


def leave_write_turn(path: str) -> None:
    """A turn taken with ``take_write_turn`` and not handed to ``begin_immediate``."""
    gate_for(path).leave()


async def begin_immediate(
    conn: sqlite3.Connection,
    busy_timeout_ms: int,
    sql: str = "BEGIN IMMEDIATE",
    cursor: sqlite3.Cursor | None = None,
    *,
    path: str,
    deadline: float | None = None,
) -> None:
    """Begin a write transaction on the database file ``path``, behind this process's other
    writers of it (unless the caller already waited: ``deadline`` from ``take_write_turn``),
    then waiting for other processes' writers without holding the loop."""
    try:
        if deadline is None:
            deadline = await take_write_turn(path)
        _register(conn)
        _holding[id(conn)] = gate_for(path)
        await _retry_begin(conn, busy_timeout_ms, sql, cursor, deadline)
    except BaseException:
        released(conn)
        raise


async def _retry_begin(
    conn: sqlite3.Connection,
    busy_timeout_ms: int,
    sql: str,
    cursor: sqlite3.Cursor | None,
    deadline: float,
) -> None:
    started = time.monotonic()
    spin_until = started + _SPIN_SECONDS
    short_until = started + _SHORT_WAIT_SECONDS
    pause = _SHORT_WAIT_PAUSE
    run = cursor if cursor is not None else conn
    conn.execute("PRAGMA busy_timeout=0")
    try:
        while True:
            try:
                run.execute(sql)
                return
            except sqlite3.OperationalError as error:
                now = time.monotonic()
                if not _is_locked(error) or now >= deadline:
                    raise
            if now < spin_until:
                await asyncio.sleep(0)
                continue
            await asyncio.sleep(pause)
            if now >= short_until:
                pause = min(pause * 2, _LONGEST_PAUSE)
    finally:
        conn.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")


def inline_connector(path: str, busy_timeout_ms: int) -> Callable[[], Any]:
    """An ``async_creator`` for ``create_async_engine`` that opens inline connections."""

    async def connect() -> InlineConnection:
        # isolation_level=None: transactions are begun explicitly (see callplane.kit.db).
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        return InlineConnection(conn, busy_timeout_ms, path)

    return connect
