"""Many rows per statement on the driver connection of an ORM session's transaction.

A section of the fixture document that can be large (calls: an imported history of hundreds of
thousands) is written with ``BulkInsert``: rows as tuples already in the driver's terms, no ORM
objects, made ready for the writer by ``batch`` (in the loader's workers), then ``executemany`` on
SQLite and ``COPY`` on PostgreSQL, in the session's own transaction.
"""

from __future__ import annotations

import contextlib
import marshal
import operator
import os
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import compress
from typing import Any

import asyncpg
from sqlalchemy import Table
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.schema import (
    CreateIndex,
    DropIndex,
    ExecutableDDLElement,
)

from callplane.kit import jsonvalues

_EMPTY_JSON: dict[type, str] = {type(None): "null", list: "[]", dict: "{}"}

#: Rows below which indexes are kept up row by row: building one reads the whole table.
INDEXES_AFTER_FROM = 10_000
#: Helper threads of SQLite's sorter while it builds the indexes after a bulk insert.
SQLITE_SORTER_THREADS = 2
#: SQLite's page cache during a bulk insert (the default is 2 MB).
SQLITE_BULK_CACHE_KIB = 64 * 1024


def random_uuid_hexes(count: int) -> list[str]:
    """``count`` random version-4 uuids as 32 hex digits (what ``uuid.uuid4().hex`` gives), from
    one read of the system's random source rather than a read and an object per uuid."""
    raw = bytearray(os.urandom(16 * count))
    raw[6::16] = bytes(byte & 0x0F | 0x40 for byte in raw[6::16])  # version 4
    raw[8::16] = bytes(byte & 0x3F | 0x80 for byte in raw[8::16])  # RFC 4122 variant
    text = raw.hex()
    return [text[start : start + 32] for start in range(0, len(text), 32)]


_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _copy_text(value: str) -> str:
    # COPY's text format escapes backslash, tab, newline and carriage return; input has no NUL.
    if "\\" in value or "\t" in value or "\n" in value or "\r" in value:
        return value.translate(_COPY_ESCAPES)
    return value


#: A row's value as a field of COPY's text format, by its type: what a bulk row holds.
_COPY_FIELD: dict[type, Callable[[Any], str]] = {
    str: _copy_text,
    int: int.__repr__,
    bool: lambda value: "t" if value else "f",
    bytes: lambda value: "\\\\x" + value.hex(),  # bytea's hex form, its backslash escaped
    type(None): lambda value: "\\N",
}


def _copy_line(row: tuple[Any, ...]) -> str:
    return "\t".join([_COPY_FIELD[value.__class__](value) for value in row])


class _DriverError(Exception):
    """A driver's error, worded as SQLAlchemy words it when the statement goes through it."""


@dataclass
class BulkInsert:
    """Many rows per statement on the driver connection of the session's transaction.

    Rows are tuples of column values already in the driver's terms: ``uuid``, ``timestamp`` and
    ``json`` encode a value exactly as the column types of ``models.base`` do through
    SQLAlchemy (pinned by tests/test_loader_calls.py). Driver errors come out as SQLAlchemy's
    (``IntegrityError`` for a conflict), so callers and the CLI handle them as before.
    """

    backend: str
    driver: Any
    dialect: Any = None

    @classmethod
    @contextlib.asynccontextmanager
    async def of(cls, session: AsyncSession) -> AsyncIterator[BulkInsert]:
        await session.flush()  # rows the ORM still holds go first: ours may refer to them
        connection = await session.connection()
        raw = await connection.get_raw_connection()
        bulk = cls(connection.dialect.name, raw.driver_connection, connection.dialect)
        if bulk.backend != "sqlite":
            # SQLAlchemy's asyncpg adapter opens the transaction with its first statement, not
            # at begin: without one, the rows would be committed as they are copied.
            await connection.exec_driver_sql("SELECT 1")
            if not bulk.driver.is_in_transaction():
                raise RuntimeError("bulk insert outside the session's transaction")
            yield bulk
            return
        # Index entries land at random places (uuids, digests): with SQLite's default 2 MB page
        # cache most inserts would first read their page back. A fixed, larger cache while the
        # rows go in (measured: a third off the attribute index), the connection's own after.
        cursor = await bulk.driver.execute("PRAGMA cache_size")
        previous = (await cursor.fetchone())[0]
        await cursor.close()
        await bulk.driver.execute(f"PRAGMA cache_size=-{SQLITE_BULK_CACHE_KIB}")
        try:
            yield bulk
        finally:
            await bulk.driver.execute(f"PRAGMA cache_size={int(previous)}")

    @contextlib.asynccontextmanager
    async def indexed_after(self, tables: Sequence[Table], coming: int) -> AsyncIterator[None]:
        """On SQLite, rows for ``tables`` go in with the tables' secondary indexes built once
        afterwards rather than entry by entry, when ``coming`` rows at least double the first.

        An imported history's index entries land at random places (uuids, digests): once the
        indexes outgrow the page cache, the writes, which this process does itself, slow down as
        the table grows. Building an index from the rows in place is a sort. Measured for
        300,000 calls: 79 µs a call maintained, 65 built afterwards. Other connections keep
        reading the tables as they were (the DDL is part of the load's transaction); on error
        nothing is built again, as the transaction and its DDL are undone.

        On PostgreSQL the server maintains indexes and foreign keys on its own core while this
        process prepares the next rows: dropping them there measured no faster, and would lock
        the tables against every reader until the import commits.
        """
        if (
            self.backend != "sqlite"
            or coming < INDEXES_AFTER_FROM
            or await self._holds_at_least(tables[0], coming)
        ):
            yield
            return
        indexes = [index for table in tables for index in table.indexes]
        for index in indexes:
            await self._execute(DropIndex(index))
        yield
        # Whatever prepared the rows is done by now: SQLite's sorter may take helper threads
        # for the builds (measured for 300,000 calls: 3.05 s with none, 2.6 with two).
        await (await self.driver.execute(f"PRAGMA threads={SQLITE_SORTER_THREADS}")).close()
        for index in indexes:
            await self._execute(CreateIndex(index))
        await (await self.driver.execute("PRAGMA threads=0")).close()

    @contextlib.asynccontextmanager
    async def foreign_keys_checked_by_caller(self) -> AsyncIterator[None]:
        """On PostgreSQL, rows go in without the per-row foreign-key triggers, where the role
        may turn them off; the caller vouches for every reference its rows make: to rows it
        inserts in this transaction, or to rows it has locked ``FOR KEY SHARE`` (what each
        trigger would have done, once per referenced row instead of once per referring row).

        Measured for 300,000 calls: the server's COPY took 18.6–20.4 s of CPU with the triggers
        and 11.4–14 without. Turning them off is ``session_replication_role = replica`` (what
        ``pg_dump --disable-triggers`` uses), for this transaction only: a superuser may, and from
        PostgreSQL 15 a role granted ``SET ON PARAMETER session_replication_role``. For any other
        role the triggers stay on and nothing else changes. SQLite checks a foreign key inside
        the insert, in C, at a fraction of the cost: it keeps checking.
        """
        if self.backend == "sqlite":
            yield
            return
        previous = await self.driver.fetchval("SELECT current_setting('session_replication_role')")
        await self.driver.execute("SAVEPOINT callplane_bulk_triggers")
        try:
            await self.driver.execute("SET LOCAL session_replication_role = replica")
        except asyncpg.InsufficientPrivilegeError:
            await self.driver.execute("ROLLBACK TO SAVEPOINT callplane_bulk_triggers")
            previous = None
        await self.driver.execute("RELEASE SAVEPOINT callplane_bulk_triggers")
        yield
        # Not reached on an error: the transaction is then rolled back, the setting with it.
        if previous is not None:
            await self.driver.execute(
                "SELECT set_config('session_replication_role', $1, true)", previous
            )

    async def _execute(self, ddl: ExecutableDDLElement) -> None:
        await (await self.driver.execute(str(ddl.compile(dialect=self.dialect)))).close()

    async def _holds_at_least(self, table: Table, rows: int) -> bool:
        # Counts no further than ``rows``: as cheap as the load is large.
        name = self.dialect.identifier_preparer.format_table(table)
        statement = f"SELECT count(*) FROM (SELECT 1 FROM {name} LIMIT ?)"  # noqa: S608
        cursor = await self.driver.execute(statement, (rows,))
        held: int = (await cursor.fetchone())[0]
        await cursor.close()
        return held >= rows

    @staticmethod
    def uuid(value: Any) -> str | None:
        # SQLite has no uuid type: SQLAlchemy's Uuid stores the 32 hex digits. PostgreSQL's
        # uuid reads them as well (rows reach it as COPY text, ``batch``).
        return None if value is None else value.hex

    def timestamp(self, value: datetime | None) -> str | None:
        """UTCDateTime's storage as text: UTC; on SQLite naive, in SQLAlchemy's format; on
        PostgreSQL with its offset, as COPY reads a timestamptz (made once, though a call's
        creation time is in several of its rows)."""
        if value is None:
            return None
        offset = value.utcoffset()
        if offset is None:
            value = value.replace(tzinfo=UTC)
        elif offset:
            value = value.astimezone(UTC)
        if self.backend != "sqlite":
            return value.isoformat()
        # SQLAlchemy's "%Y-%m-%d %H:%M:%S.%f"; isoformat pads the year to four digits too.
        return value.replace(tzinfo=None).isoformat(" ", "microseconds")

    @staticmethod
    def json(value: Any) -> str:
        # None included: SQLAlchemy's JSON type stores Python None as JSON null, not SQL NULL.
        # Most optional columns of an imported row are empty: their text is known.
        if not value and (text := _EMPTY_JSON.get(type(value))) is not None:
            return text
        return jsonvalues.dumps(value)

    def flag(self, value: bool | None) -> Any:
        # SQLite stores a boolean as the integer (as SQLAlchemy's Boolean does), bound directly.
        if value is None or self.backend != "sqlite":
            return value
        return int(value)

    def batch(self, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> Any:
        """Rows for ``columns`` made ready for ``insert``; pure, so it runs where the rows are
        built (the loader's worker processes) rather than in the writer.

        On SQLite, the writer binding the rows is the import's bottleneck, and Python's driver
        binds ``None`` through its adapter lookup (an attribute miss, an exception raised and
        cleared): measured, a NULL costs the writer ~290 ns and an integer ~8. So rows are
        grouped by which columns are NULL, and each group names only its other columns: one
        left out is NULL, as the bulk tables have no column defaults (pinned by a test). The
        groups travel as ``marshal`` data (about three times faster to make than pickle's).
        On PostgreSQL, with the server's COPY on a core of its own, the rest of the import
        shares the other: the rows become COPY's text here, so the writer only sends bytes (its
        encoding of records, and the unpickling of their timestamps, measured ~4 s of 300,000
        calls).
        """
        if self.backend != "sqlite":
            text = "".join([_copy_line(row) + "\n" for row in rows])
            return tuple(columns), text.encode()
        groups: dict[tuple[bool, ...], list[tuple[Any, ...]]] = {}
        nulls = (None,) * len(columns)
        whole = groups[(True,) * len(columns)] = []
        for row in rows:
            if None not in row:  # most rows of most tables: one C-level scan
                whole.append(row)
                continue
            present = tuple(map(operator.is_not, row, nulls))
            group = groups.get(present)
            if group is None:
                group = groups[present] = []
            group.append(tuple(compress(row, present)))
        return marshal.dumps(
            [
                (tuple(compress(columns, present)), group)
                for present, group in groups.items()
                if group
            ]
        )

    async def insert(self, table: str, batch: Any) -> None:
        if self.backend == "sqlite":
            for columns, rows in marshal.loads(batch):
                await self._insert_sqlite(table, columns, rows)
            return
        columns, text = batch
        if not text:
            return
        statement = f"COPY {table} ({', '.join(columns)})"
        try:
            # A memoryview: asyncpg would take bytes for a file's path.
            await self.driver.copy_to_table(
                table, source=memoryview(text), columns=columns, format="text"
            )
        except asyncpg.IntegrityConstraintViolationError as exc:
            raise IntegrityError(statement, None, _DriverError(f"{type(exc)}: {exc}")) from None
        except asyncpg.PostgresError as exc:
            raise DBAPIError(statement, None, _DriverError(f"{type(exc)}: {exc}")) from None

    async def _insert_sqlite(
        self, table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]
    ) -> None:
        # Names from the models, never from input.
        names, marks = ", ".join(columns), ", ".join("?" for _ in columns)
        statement = f"INSERT INTO {table} ({names}) VALUES ({marks})"  # noqa: S608
        cursor = await self.driver.cursor()
        try:
            await cursor.executemany(statement, rows)
        except sqlite3.IntegrityError as exc:
            raise IntegrityError(statement, None, exc) from None
        except sqlite3.Error as exc:
            raise DBAPIError(statement, None, exc) from None
        finally:
            await cursor.close()
