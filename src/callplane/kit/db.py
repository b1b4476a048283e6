"""Engines, sessions and the dialect-specific pieces every domain shares.

One URL picks the backend: ``sqlite:///PATH`` (aiosqlite) or ``postgresql://...`` (asyncpg).
For SQLite the connection is tuned once per connection (WAL, busy timeout, foreign keys) and
transactions are begun by us, not by the driver: read requests use a deferred ``BEGIN`` and write
requests ``BEGIN IMMEDIATE``, so two writers queue on the busy timeout instead of failing with
"database is locked" when a read lock would have to be upgraded mid-transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Table, column, event, func, select, table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.sql import FromClause

from callplane.kit import jsonvalues
from callplane.kit.sqlite_inline import inline_connector

SQLITE_BUSY_TIMEOUT_MS = 10_000


def async_url(url: str) -> str:
    """The async-driver URL for a user-facing one (sqlite → aiosqlite, postgresql → asyncpg)."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return parsed.set(drivername="sqlite+aiosqlite").render_as_string(hide_password=False)
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)
    raise ValueError(f"unsupported database URL scheme: {parsed.drivername}")


class DatabaseUnreachable(OSError):
    """A new connection to PostgreSQL could not be made: the server refused it, is full
    (``max_connections``, a role's limit), is starting or shutting down. Not a bug: the web
    floor answers it 503 with Retry-After. asyncpg raises its own exceptions while connecting,
    which SQLAlchemy passes on unwrapped, so without this they were answered 500. An OSError,
    as a refused connection always was: the CLI and the worker already treat those as "the
    database cannot be reached"."""


def _name_connect_failures(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "do_connect")
    def _connect(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        try:
            return dialect.connect(*cargs, **cparams)
        except Exception as exc:
            raise DatabaseUnreachable(f"{type(exc).__name__}: {exc}") from exc


#: Pages the write-ahead log may hold before a commit copies them into the database (SQLite's
#: default is 1,000): a page changed again before then is copied once, and each copy ends in an
#: fsync of the database file, which a commit in a request pays for.
SQLITE_WAL_AUTOCHECKPOINT_PAGES = 10_000


def tune_sqlite_connection(connection: Any, busy_timeout_ms: int) -> None:
    """Every SQLite connection's settings (the session's, and ``kit.driver.SqlitePool``'s);
    ``connection``: anything with ``execute``."""
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    connection.execute(f"PRAGMA wal_autocheckpoint={SQLITE_WAL_AUTOCHECKPOINT_PAGES}")
    connection.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
    connection.execute("PRAGMA foreign_keys=ON")


def _tune_sqlite(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Hand transaction control to the "begin" hook below (the driver's own BEGIN is deferred
        # and cannot be made IMMEDIATE).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        tune_sqlite_connection(cursor, SQLITE_BUSY_TIMEOUT_MS)
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")


class Database:
    """The engines of one process, and sessions for read or write requests.

    PostgreSQL: one asyncpg engine. SQLite: ``engine`` (aiosqlite, a driver thread; used for
    migrations and maintenance) and ``serving_engine``, whose connections run sqlite3 inline on
    the event loop (``callplane.kit.sqlite_inline``) for the requests themselves; its write sessions
    begin IMMEDIATE.
    """

    def __init__(self, url: str, *, pool_size: int = 10) -> None:
        self.url = url
        dialect_url = async_url(url)
        self.backend = make_url(dialect_url).get_backend_name()
        kwargs: dict[str, Any] = {
            "pool_pre_ping": False,
            "json_serializer": jsonvalues.dumps,
            "json_deserializer": jsonvalues.loads,
        }
        if self.backend == "postgresql":
            kwargs.update(pool_size=pool_size, max_overflow=pool_size * 2)
        else:
            kwargs.update(pool_size=pool_size, max_overflow=pool_size)
        self.engine = create_async_engine(dialect_url, **kwargs)
        if self.backend == "postgresql":
            _name_connect_failures(self.engine)
        self.serving_engine = self.engine
        if self.backend == "sqlite":
            _tune_sqlite(self.engine)
            path = make_url(dialect_url).database or ""
            self.serving_engine = create_async_engine(
                dialect_url,
                async_creator=inline_connector(path, SQLITE_BUSY_TIMEOUT_MS),
                **kwargs,
            )
            _tune_sqlite(self.serving_engine)
            self.write_engine = self.serving_engine.execution_options(sqlite_begin="IMMEDIATE")
        else:
            self.write_engine = self.engine
        self.read_sessions = async_sessionmaker(self.serving_engine, expire_on_commit=False)
        self.write_sessions = async_sessionmaker(self.write_engine, expire_on_commit=False)

    def session(self, *, write: bool) -> AsyncSession:
        return (self.write_sessions if write else self.read_sessions)()

    async def dispose(self) -> None:
        await self.engine.dispose()
        if self.serving_engine is not self.engine:
            await self.serving_engine.dispose()


def dialect_insert(session: AsyncSession, table: Table | FromClause) -> Any:
    """An INSERT that supports ``on_conflict_do_update``/``do_nothing`` on either backend."""
    name = session.get_bind().dialect.name
    factory: Callable[[Any], Any] = postgresql.insert if name == "postgresql" else sqlite.insert
    return factory(table)


async def sync_id_sequence(session: AsyncSession, table_name: str, column_name: str = "id") -> None:
    """After inserting explicit integer ids, move PostgreSQL's sequence past them.

    SQLite needs nothing: an INTEGER PRIMARY KEY always continues from the largest id.
    """
    if session.get_bind().dialect.name != "postgresql":
        return
    largest = select(func.max(column(column_name))).select_from(table(table_name)).scalar_subquery()
    sequence = func.pg_get_serial_sequence(table_name, column_name)
    await session.execute(
        select(func.setval(sequence, func.greatest(func.coalesce(largest, 0), 1)))
    )
