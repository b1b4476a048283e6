"""Statements compiled once and executed on the driver connection: the data-access style of the
hot paths.

Where the line is. Requests that run the same few statements thousands of times a second (a
custom-data record read, patch, replace or delete, a list page, and contact data's PUT, GET and
DELETE) use this module: the SQLAlchemy Core statement is compiled once per shape (``Prepared``),
and each request runs it on the driver connection under the request's session — stdlib ``sqlite3``
inline on the event loop (``callplane.kit.sqlite_inline``), or an asyncpg prepared statement on
PostgreSQL — in the same transaction that the unit of work commits or rolls back. Everything else
(table management, DDL, batch inserts, authentication, the other domains) goes through the ORM
session: those statements vary in shape, run rarely, and there the session's conveniences cost
nothing that shows. The profile of a record read showed the session layer (greenlet switches, an
execution context, cache keys, result objects per statement) costing several times what SQLite
spends on the query; here a statement costs one driver call plus the type conversions SQLAlchemy
would have applied.

Values go through the same bind and result processors SQLAlchemy uses for the column types, so a
row reads back exactly as it does through the session; driver errors are raised as SQLAlchemy's
(``IntegrityError`` …) with the driver's exception as ``orig``, as the session would.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import re
import sqlite3
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncpg
from sqlalchemy import Float, Numeric, exc
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.sql import ClauseElement
from sqlalchemy.types import TypeDecorator, TypeEngine

from callplane.kit import jsonvalues, wiretext
from callplane.kit.db import tune_sqlite_connection
from callplane.kit.sqlite_inline import (
    InlineConnection,
    begin_immediate,
    leave_write_turn,
    released,
    take_write_turn,
)

_Processor = Callable[[Any], Any] | None
_PLACEHOLDER = re.compile(r"\$(\d+)")
_DRIVER = "callplane.kit.driver"

#: Called with every statement compiled for the driver path: these statements never pass an
#: engine's ``before_execute``, so the test suite's tenancy check watches them here.
compile_observers: list[Callable[[ClauseElement], None]] = []


@dataclass(frozen=True, slots=True)
class Prepared:
    """One statement compiled for one dialect: its SQL, where each parameter goes, and how the
    values of its parameters and result columns are converted."""

    sql: str
    #: parameter names in positional order, each with its bind processor
    params: tuple[tuple[str, _Processor], ...]
    #: values of parameters bound in the statement itself (one-off statements)
    defaults: Mapping[str, Any]
    #: result column names, each with its result processor
    columns: tuple[tuple[str, _Processor], ...]
    #: parameter names in positional order, each with its literal processor
    literals: tuple[tuple[str, _Processor], ...] = ()
    #: the name it was compiled under (``fixed_statement``), if any
    name: str = ""
    _keys: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _converted: tuple[tuple[int, Callable[[Any], Any]], ...] = field(
        init=False, repr=False, compare=False
    )
    #: the SQL around its ``$n`` placeholders (PostgreSQL), for ``rendered``
    _pieces: tuple[tuple[bool, str], ...] = field(init=False, repr=False, compare=False)

    @classmethod
    def compile(cls, statement: ClauseElement, dialect: Dialect, *, wire: bool = False) -> Prepared:
        """``wire``: the rows only go out as JSON, so UUIDs and timestamps are read as the text
        the body shows (``callplane.kit.wiretext``) rather than as Python objects."""
        for observe in compile_observers:
            observe(statement)
        compiled: Any = statement.compile(dialect=dialect)
        names: Sequence[str] = compiled.positiontup or ()
        binds = compiled.binds
        params = tuple(
            (name, binds[name].type.dialect_impl(dialect).bind_processor(dialect)) for name in names
        )
        defaults = {
            name: binds[name].effective_value
            for name in names
            if not binds[name].required and binds[name].callable is None
        }
        columns = tuple(
            (column.key, _result_processor(column.type, dialect, wire))
            for column in getattr(statement, "exported_columns", ())
        )
        literals = tuple(
            (name, binds[name].type.dialect_impl(dialect).literal_processor(dialect))
            for name in names
        )
        return cls(compiled.string, params, defaults, columns, literals)

    def literal_values(self, values: Mapping[str, Any]) -> list[str]:
        """The parameters' values as SQL literals (SQLAlchemy's literal processors for their
        types), in positional order, to be sent where no parameters can go."""
        defaults = self.defaults
        texts: list[str] = []
        add = texts.append
        for name, render in self.literals:
            value = values[name] if name in values else defaults[name]
            if value is None:
                add("NULL")
            elif render is None:
                raise TypeError(f"no literal form for the parameter {name!r}")
            else:
                add(render(value))
        return texts

    def rendered(self, values: Mapping[str, Any]) -> str:
        """The statement with its values written in as literals."""
        texts = self.literal_values(values)
        pieces = self._pieces
        return "".join(texts[int(piece)] if odd else piece for odd, piece in pieces)

    def arguments(self, values: Mapping[str, Any]) -> list[Any]:
        out = []
        defaults = self.defaults
        for name, process in self.params:
            value = values[name] if name in values else defaults[name]
            out.append(value if process is None or value is None else process(value))
        return out

    def __post_init__(self) -> None:
        # A row is converted where a column has a processor and zipped with the names in C: a
        # page of rows would otherwise pay a Python step for every column of every row, most of
        # which (text, integers) come back from the driver as they are.
        object.__setattr__(self, "_keys", tuple(key for key, _ in self.columns))
        object.__setattr__(
            self,
            "_converted",
            tuple((index, p) for index, (_, p) in enumerate(self.columns) if p is not None),
        )
        # re.split keeps the captured placeholder numbers at the odd places (1-based).
        split = _PLACEHOLDER.split(self.sql)
        object.__setattr__(
            self,
            "_pieces",
            tuple(
                (True, str(int(piece) - 1)) if index % 2 else (False, piece)
                for index, piece in enumerate(split)
            ),
        )

    def record(self, row: Sequence[Any]) -> dict[str, Any]:
        if self._converted:
            values = list(row)
            for index, process in self._converted:
                value = values[index]
                if value is not None:
                    values[index] = process(value)
            row = values
        return dict(zip(self._keys, row, strict=True))


#: Statements of fixed shape compiled once per dialect class. A memo of a pure function (the
#: same statement and dialect always compile the same), so it cannot go stale and needs no
#: owner; bounded by the fixed statements of the modules that use it.
_fixed: dict[tuple[str, type[Dialect], bool], Prepared] = {}


def fixed_statement(
    name: str, dialect: Dialect, build: Callable[[], ClauseElement], *, wire: bool = False
) -> Prepared:
    """The compiled form of the module-level statement ``name`` (``build`` makes it): compiled
    on first use, because the bind and result processors are the serving engine's dialect's."""
    key = (name, type(dialect), wire)
    prepared = _fixed.get(key)
    if prepared is None:
        compiled = Prepared.compile(build(), dialect, wire=wire)
        prepared = _fixed[key] = dataclasses.replace(compiled, name=name)
    return prepared


#: Fixed statements run with a COMMIT (``run_at_commit``), by name. A ``PostgresPool``
#: prepares each on every connection it opens, so the COMMIT carries ``EXECUTE name(values)``:
#: the server would otherwise parse and plan the statement's text in every transaction, which
#: costs it more than running the statement.
_at_commit: dict[str, Callable[[], ClauseElement]] = {}


def at_commit_statement(
    name: str, build: Callable[[], ClauseElement]
) -> Callable[[Dialect], Prepared]:
    """Declare the fixed statement ``name`` (``build`` makes it) as one run with COMMITs;
    declared at import, before a pool opens. Returns what gives its compiled form for a
    dialect (``fixed_statement``)."""
    _at_commit[name] = build

    def compiled(dialect: Dialect) -> Prepared:
        return fixed_statement(name, dialect, build)

    return compiled


@functools.cache
def _server_name(name: str) -> str:
    return "callplane_" + re.sub(r"\W", "_", name)


#: PostgreSQL type oids: SQLAlchemy's asyncpg numeric types pick their result processor by the
#: column's oid (the session passes the cursor's; here it is the one our types are declared as).
_PG_FLOAT8, _PG_NUMERIC = 701, 1700


def _result_processor(type_: TypeEngine[Any], dialect: Dialect, wire: bool = False) -> _Processor:
    impl = type_.dialect_impl(dialect)
    base = impl.load_dialect_impl(dialect) if isinstance(impl, TypeDecorator) else impl
    oid = None
    if dialect.name == "postgresql" and isinstance(base, Numeric):
        oid = _PG_FLOAT8 if isinstance(base, Float) else _PG_NUMERIC
    processor: _Processor = impl.result_processor(dialect, oid)
    return wiretext.processor(type_, dialect, processor) if wire else processor


class DriverConnection:
    """A driver connection inside a transaction: the session's (``driver_connection``), or one
    of its own (``SqlitePool``)."""

    #: statements run so far (a caller can tell whether an error came from the database)
    executed = 0

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect

    async def fetchone(
        self, prepared: Prepared, values: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        raise NotImplementedError

    async def fetchall(self, prepared: Prepared, values: Mapping[str, Any]) -> list[dict[str, Any]]:
        raise NotImplementedError

    async def scalar(self, prepared: Prepared, values: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    async def count(self, prepared: Prepared, values: Mapping[str, Any]) -> int:
        """The result of a ``SELECT count(*)`` statement."""
        return int(await self.scalar(prepared, values) or 0)

    async def executemany(self, prepared: Prepared, rows: Sequence[Mapping[str, Any]]) -> None:
        """One statement run once per row, as one driver call."""
        raise NotImplementedError

    async def fetchall_raw(self, prepared: Prepared, values: Mapping[str, Any]) -> list[Any]:
        """The rows as the driver gives them, unconverted (for a caller that hands them back to
        the same driver, or knows its types: SQLite reads a timestamp as its stored text)."""
        raise NotImplementedError

    async def executemany_raw(self, prepared: Prepared, rows: Sequence[Sequence[Any]]) -> None:
        """``executemany`` of rows already in the driver's form (read by ``fetchall_raw`` from
        columns of the same types), in the statement's parameter order."""
        raise NotImplementedError

    async def execute_raw(self, prepared: Prepared, arguments: Sequence[Any]) -> None:
        """Run ``prepared`` once with ``arguments`` already in the driver's form, in the
        statement's parameter order: no value goes through a type's conversion."""
        raise NotImplementedError

    async def run_at_commit(self, prepared: Prepared, values: Mapping[str, Any]) -> None:
        """Run ``prepared`` as the transaction's last statement: sent with its COMMIT in one
        round trip where the transaction is this module's own on PostgreSQL (``PostgresPool``),
        run now everywhere else (on SQLite a statement costs no round trip)."""
        await self.scalar(prepared, values)


#: Exact counts a SQLite connection keeps (see ``_Sqlite.count``).
KEPT_COUNTS = 64


class _Sqlite(DriverConnection):
    def __init__(self, connection: sqlite3.Connection, dialect: Dialect) -> None:
        super().__init__(dialect)
        self._conn = connection
        #: set by ``SqlitePool.begin`` for a transaction that only reads
        self.read_only = False
        self._counts: OrderedDict[tuple[Any, ...], tuple[tuple[int, int], int]] = OrderedDict()

    def _run(self, prepared: Prepared, values: Mapping[str, Any]) -> sqlite3.Cursor:
        arguments = prepared.arguments(values)
        self.executed += 1
        try:
            return self._conn.execute(prepared.sql, arguments)
        except sqlite3.Error as error:
            raise exc.DBAPIError.instance(prepared.sql, arguments, error, sqlite3.Error) from error

    async def fetchone(
        self, prepared: Prepared, values: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        row = self._run(prepared, values).fetchone()
        return None if row is None else prepared.record(row)

    async def fetchall(self, prepared: Prepared, values: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [prepared.record(row) for row in self._run(prepared, values).fetchall()]

    async def scalar(self, prepared: Prepared, values: Mapping[str, Any]) -> Any:
        row = self._run(prepared, values).fetchone()
        return None if row is None else row[0]

    async def executemany(self, prepared: Prepared, rows: Sequence[Mapping[str, Any]]) -> None:
        await self.executemany_raw(prepared, [prepared.arguments(values) for values in rows])

    async def fetchall_raw(self, prepared: Prepared, values: Mapping[str, Any]) -> list[Any]:
        return self._run(prepared, values).fetchall()

    async def executemany_raw(self, prepared: Prepared, rows: Sequence[Sequence[Any]]) -> None:
        self.executed += 1
        try:
            self._conn.executemany(prepared.sql, rows)
        except sqlite3.Error as error:
            raise exc.DBAPIError.instance(prepared.sql, rows, error, sqlite3.Error) from error

    async def execute_raw(self, prepared: Prepared, arguments: Sequence[Any]) -> None:
        self.executed += 1
        try:
            self._conn.execute(prepared.sql, arguments)
        except sqlite3.Error as error:
            raise exc.DBAPIError.instance(prepared.sql, arguments, error, sqlite3.Error) from error

    async def count(self, prepared: Prepared, values: Mapping[str, Any]) -> int:
        """An exact count over many rows (a list's ``total_count``) walks every matching index
        entry: most of a list request's time. In a read-only transaction, a count this connection
        made before is answered again while the database is the same: no other connection
        committed since (``PRAGMA data_version``, read in this transaction's snapshot) and this
        one changed nothing (``total_changes``, which rolled-back changes move too). Only counts
        made in read-only transactions are kept, so none includes uncommitted changes."""
        if not self.read_only:
            return await super().count(prepared, values)
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        state = (version, self._conn.total_changes)
        key = (prepared.sql, *prepared.arguments(values))
        kept = self._counts.get(key)
        if kept is not None and kept[0] == state:
            self._counts.move_to_end(key)
            return kept[1]
        total = await super().count(prepared, values)
        self._counts[key] = (state, total)
        if len(self._counts) > KEPT_COUNTS:
            self._counts.popitem(last=False)
        return total


def _postgres_error(prepared: Prepared, arguments: list[Any], error: Exception) -> exc.DBAPIError:
    state = getattr(error, "sqlstate", None) or ""
    kind: type[exc.DBAPIError]
    if isinstance(error, asyncpg.IntegrityConstraintViolationError):
        kind = exc.IntegrityError
    elif state.startswith("42"):
        kind = exc.ProgrammingError
    elif state.startswith("22"):
        kind = exc.DataError
    else:
        kind = exc.OperationalError
    return kind(prepared.sql, arguments, error)


class _Postgres(DriverConnection):
    """asyncpg's own statement cache prepares each SQL text once per connection."""

    def __init__(
        self,
        connection: asyncpg.Connection,
        dialect: Dialect,
        own: bool = False,
        prepared_names: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(dialect)
        self._conn = connection
        #: whether the transaction is a ``PostgresPool``'s (False: the session's)
        self.own = own
        #: the ``at_commit_statement``s prepared on this connection
        self.prepared_names = prepared_names
        #: statements to send with the COMMIT (``run_at_commit``), as SQL text
        self.at_commit: list[str] = []

    async def run_at_commit(self, prepared: Prepared, values: Mapping[str, Any]) -> None:
        if not self.own:  # the session commits, through its own driver calls
            await self.scalar(prepared, values)
            return
        # One simple query ("...; COMMIT") carries no parameters: the values are written in.
        # The pool's connections set standard_conforming_strings, which the literal
        # processors assume (a backslash is a backslash).
        self.executed += 1
        if prepared.name in self.prepared_names:
            arguments = ", ".join(prepared.literal_values(values))
            self.at_commit.append(f"EXECUTE {_server_name(prepared.name)}({arguments})")
        else:
            self.at_commit.append(prepared.rendered(values))

    async def fetchone(
        self, prepared: Prepared, values: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        arguments = prepared.arguments(values)
        self.executed += 1
        try:
            row = await self._conn.fetchrow(prepared.sql, *arguments)
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as error:
            raise _postgres_error(prepared, arguments, error) from error
        return None if row is None else prepared.record(row)

    async def fetchall(self, prepared: Prepared, values: Mapping[str, Any]) -> list[dict[str, Any]]:
        arguments = prepared.arguments(values)
        self.executed += 1
        try:
            rows = await self._conn.fetch(prepared.sql, *arguments)
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as error:
            raise _postgres_error(prepared, arguments, error) from error
        return [prepared.record(row) for row in rows]

    async def scalar(self, prepared: Prepared, values: Mapping[str, Any]) -> Any:
        arguments = prepared.arguments(values)
        self.executed += 1
        try:
            return await self._conn.fetchval(prepared.sql, *arguments)
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as error:
            raise _postgres_error(prepared, arguments, error) from error

    async def executemany(self, prepared: Prepared, rows: Sequence[Mapping[str, Any]]) -> None:
        await self.executemany_raw(prepared, [prepared.arguments(values) for values in rows])

    async def fetchall_raw(self, prepared: Prepared, values: Mapping[str, Any]) -> list[Any]:
        arguments = prepared.arguments(values)
        self.executed += 1
        try:
            rows: list[Any] = await self._conn.fetch(prepared.sql, *arguments)
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as error:
            raise _postgres_error(prepared, arguments, error) from error
        return rows

    async def executemany_raw(self, prepared: Prepared, rows: Sequence[Sequence[Any]]) -> None:
        self.executed += 1
        try:
            await self._conn.executemany(prepared.sql, rows)
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as error:
            raise _postgres_error(prepared, list(rows), error) from error


async def driver_connection(session: AsyncSession) -> DriverConnection:
    """The driver connection of ``session``'s transaction (begun here when it was not yet)."""
    # Remembered per transaction: after a rollback the session may hold another connection.
    transaction = session.sync_session.get_transaction()
    found: tuple[Any, DriverConnection] | None = session.info.get(_DRIVER)
    if found is not None and transaction is not None and found[0] is transaction:
        return found[1]
    connection = await session.connection()
    raw = await connection.get_raw_connection()
    driver = raw.driver_connection
    made: DriverConnection
    if isinstance(driver, InlineConnection):
        # SQLite: the session's BEGIN (DEFERRED or IMMEDIATE, callplane.kit.db) already ran.
        made = _Sqlite(driver.sqlite, connection.dialect)
    elif isinstance(driver, asyncpg.Connection):
        # SQLAlchemy's asyncpg adapter opens its transaction lazily, before its first
        # statement; a statement run beside it must open it the same way, or it would run
        # outside the transaction the unit of work commits (tests/test_unit_of_work.py).
        adapter: Any = raw.dbapi_connection
        if not adapter._started:
            await adapter._start_transaction()
        made = _Postgres(driver, connection.dialect)
    else:
        raise TypeError(f"no driver path for {type(driver).__name__}")
    session.info[_DRIVER] = (session.sync_session.get_transaction(), made)
    return made


#: Where a hot-path statement runs: a request's session (on its driver connection), or a
#: transaction of its own (``SqlitePool``, ``PostgresPool``).
Db = AsyncSession | DriverConnection


async def driver_of(db: Db) -> DriverConnection:
    return db if isinstance(db, DriverConnection) else await driver_connection(db)


def dialect_of(db: Db) -> Dialect:
    return db.dialect if isinstance(db, DriverConnection) else db.get_bind().dialect


class SqlitePool:
    """Transactions of their own, for requests that never open a session (``custom_data.fast``
    when the API key and the table are already known, contact data's PUT and GET when the key
    is): sqlite3 connections tuned as ``callplane.kit.db`` tunes the session's, run inline, begun
    DEFERRED to read and IMMEDIATE to write (waiting for the write lock without holding the
    loop). A request uses either such a
    transaction or the session's, never both."""

    def __init__(self, path: str, dialect: Dialect, busy_timeout_ms: int, size: int = 10) -> None:
        self._path = path
        self._dialect = dialect
        self._busy_timeout_ms = busy_timeout_ms
        self._size = size
        self._idle: list[_Sqlite] = []

    def _open(self) -> _Sqlite:
        conn = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
        tune_sqlite_connection(conn, self._busy_timeout_ms)
        return _Sqlite(conn, self._dialect)

    async def begin(self, *, write: bool) -> DriverConnection:
        try:
            # A writer waits for its process's turn before it takes a connection.
            deadline = await take_write_turn(self._path) if write else None
        except sqlite3.Error as error:
            raise exc.DBAPIError.instance("BEGIN", [], error, sqlite3.Error) from error
        try:
            connection = self._idle.pop() if self._idle else self._open()
        except BaseException:
            if deadline is not None:
                leave_write_turn(self._path)
            raise
        conn = connection._conn
        try:
            if deadline is not None:
                await begin_immediate(
                    conn, self._busy_timeout_ms, path=self._path, deadline=deadline
                )
            else:
                conn.execute("BEGIN")
        except sqlite3.Error as error:
            conn.close()
            raise exc.DBAPIError.instance("BEGIN", [], error, sqlite3.Error) from error
        connection.read_only = not write
        return connection

    async def end(self, connection: DriverConnection, *, commit: bool) -> None:
        assert isinstance(connection, _Sqlite)
        conn = connection._conn
        try:
            if commit:
                conn.commit()
            else:
                conn.rollback()
        except sqlite3.Error as error:
            conn.close()
            raise exc.DBAPIError.instance("COMMIT", [], error, sqlite3.Error) from error
        finally:
            released(conn)
        if len(self._idle) < self._size:
            self._idle.append(connection)
        else:
            conn.close()

    async def close(self) -> None:
        while self._idle:
            self._idle.pop()._conn.close()


def _json_decoder(raw: bytes) -> Any:
    return jsonvalues.loads(raw.decode())


def _jsonb_encoder(text: str) -> bytes:
    return b"\x01" + text.encode()  # jsonb's binary format: a version byte, then the text


def _jsonb_decoder(raw: bytes) -> Any:
    return jsonvalues.loads(raw[1:].decode())


class PostgresPool:
    """The same as ``SqlitePool`` on PostgreSQL: asyncpg connections of a pool of their own
    (opened on first use, in the serving process), with the JSON codecs SQLAlchemy's asyncpg
    dialect installs on its connections, so the compiled statements' conversions hold."""

    def __init__(self, dsn: str, dialect: Dialect, size: int = 10) -> None:
        self._dsn = dsn
        self._dialect = dialect
        self._size = size
        self._pool: asyncpg.Pool | None = None
        self._opening = asyncio.Lock()
        #: the ``at_commit_statement``s every connection prepares (those declared when the
        #: pool opened)
        self._prepared_names: frozenset[str] = frozenset()

    async def _setup(self, conn: asyncpg.Connection) -> None:
        for name in self._prepared_names:
            prepared = fixed_statement(name, self._dialect, _at_commit[name])
            await conn.execute(f"PREPARE {_server_name(name)} AS {prepared.sql}")
        await conn.set_type_codec(
            "json", encoder=str.encode, decoder=_json_decoder, schema="pg_catalog", format="binary"
        )
        await conn.set_type_codec(
            "jsonb",
            encoder=_jsonb_encoder,
            decoder=_jsonb_decoder,
            schema="pg_catalog",
            format="binary",
        )

    @staticmethod
    async def _reset(_conn: asyncpg.Connection) -> None:
        """In place of asyncpg's reset query on every release (unlocking advisory locks, closing
        cursors, unlistening, resetting settings): a round trip per request, for state these
        connections never take. A transaction left open (a request cancelled between its
        statements) is still rolled back: asyncpg does that before it calls this."""

    async def _opened(self) -> asyncpg.Pool:
        async with self._opening:
            if self._pool is None:
                self._prepared_names = frozenset(_at_commit)
                self._pool = await asyncpg.create_pool(
                    self._dsn,
                    min_size=0,
                    max_size=self._size,
                    init=self._setup,
                    reset=self._reset,
                    server_settings={"standard_conforming_strings": "on"},
                )
        return self._pool

    async def begin(self, *, write: bool) -> DriverConnection:
        pool = self._pool or await self._opened()
        conn = await pool.acquire()
        try:
            # BEGIN and COMMIT are sent as they are rather than through asyncpg's Transaction,
            # so statements can go with the COMMIT (``run_at_commit``).
            await conn.execute("BEGIN")
        except BaseException as error:
            await pool.release(conn)
            if isinstance(error, asyncpg.PostgresError | asyncpg.InterfaceError):
                raise _postgres_error(_BEGIN, [], error) from error
            raise
        return _Postgres(conn, self._dialect, own=True, prepared_names=self._prepared_names)

    async def end(self, connection: DriverConnection, *, commit: bool) -> None:
        assert isinstance(connection, _Postgres) and self._pool is not None
        conn = connection._conn
        try:
            if commit:
                await conn.execute(";".join([*connection.at_commit, "COMMIT"]))
            else:
                await conn.execute("ROLLBACK")
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as error:
            # A statement sent with the COMMIT failed: the transaction is aborted, not ended.
            if not conn.is_closed() and conn.is_in_transaction():
                with contextlib.suppress(asyncpg.PostgresError, asyncpg.InterfaceError):
                    await conn.execute("ROLLBACK")
            raise _postgres_error(_COMMIT, [], error) from error
        finally:
            await self._pool.release(connection._conn)

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()


_BEGIN = Prepared("BEGIN", (), {}, ())
_COMMIT = Prepared("COMMIT", (), {}, ())

#: A pool of transactions of their own (``SqlitePool`` or ``PostgresPool``).
OwnPool = SqlitePool | PostgresPool


def pool_for(engine: AsyncEngine, busy_timeout_ms: int) -> OwnPool | None:
    """The pool of own transactions for an engine's database."""
    url = engine.url
    if url.get_backend_name() == "postgresql":
        dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        return PostgresPool(dsn, engine.dialect)
    if url.get_backend_name() != "sqlite" or not url.database:
        return None
    return SqlitePool(url.database, engine.dialect, busy_timeout_ms)
