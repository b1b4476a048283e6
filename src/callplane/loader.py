"""The fixture document of DESIGN §8, loaded in one transaction.

Each domain contributes the sections it owns with ``@section("name")`` in its ``fixtures``
module; sections run in dependency order (agents before the numbers that route to them, calls
before their feedback). A section validates its items, inserts them, and returns the ids it
created, in document order. Any invalid item aborts the whole load with a ``LoadError``.

Small sections go through the ORM. A section that can be large (calls: an imported history of
hundreds of thousands) writes with ``BulkInsert`` instead: rows as tuples, many per statement, on
the driver connection of the session's own transaction (``executemany`` on SQLite, ``COPY`` on
PostgreSQL), a chunk of items at a time so memory does not grow with the document.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

import asyncpg
from pydantic import BaseModel, ValidationError
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from callplane import jsonvalues
from callplane.errors import CallplaneError, InvalidInput
from callplane.jsonvalues import check_value, is_plain
from callplane.settings import Settings

#: Sections in the order they are loaded; also the keys a document may have.
SECTION_ORDER = (
    "agents",
    "voices",
    "phone_numbers",
    "call_tags",
    "calls",
    "feedback",
    "external_calls",
    "call_recordings",
    "tables",
    "contacts",
)


class LoadError(CallplaneError):
    status_code = 422


@dataclass
class LoadContext:
    session: AsyncSession
    organization_id: int
    settings: Settings
    #: Free-form per-load memory for sections that refer to each other's items.
    memo: dict[str, Any] = field(default_factory=dict)


SectionLoader = Callable[[LoadContext, list[Any]], Awaitable[list[Any]]]
_SECTIONS: dict[str, SectionLoader] = {}


def section(name: str) -> Callable[[SectionLoader], SectionLoader]:
    if name not in SECTION_ORDER:
        raise ValueError(f"unknown fixture section {name!r}")

    def register(loader: SectionLoader) -> SectionLoader:
        _SECTIONS[name] = loader
        return loader

    return register


M = TypeVar("M", bound=BaseModel)


def parse_items(name: str, items: list[Any], model: type[M], first_index: int = 0) -> list[M]:
    """Validate every item of a section, naming the first bad one: ``voices[2].name: ...``.

    ``first_index``: the position of ``items[0]`` in the section, when validating a slice."""
    parsed = []
    for index, item in enumerate(items, first_index):
        try:
            parsed.append(model.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise LoadError(
                f"{name}[{index}]{'.' + where if where else ''}: {first['msg']}"
            ) from None
    return parsed


def _import_sections() -> None:
    """The modules that register sections, listed here. Imported on first use rather than at
    the top: each of them imports this module for ``@section``."""
    from callplane.call_tags import fixtures as call_tags
    from callplane.calls import fixtures as calls
    from callplane.contacts import fixtures as contacts
    from callplane.custom_data import fixtures as custom_data
    from callplane.external_calls import fixtures as external_calls
    from callplane.feedback import fixtures as feedback
    from callplane.orgs import fixtures as orgs
    from callplane.phone_numbers import fixtures as phone_numbers
    from callplane.voices import fixtures as voices

    registering = (orgs, voices, phone_numbers, call_tags, calls, feedback, external_calls)
    assert all((*registering, contacts, custom_data))


async def load_document(
    session: AsyncSession, settings: Settings, organization_id: int, document: Any
) -> dict[str, list[Any]]:
    """Load a document for one organization; flushes but does not commit."""
    _import_sections()
    if not isinstance(document, dict):
        raise LoadError("the fixture document must be a JSON object")
    try:
        # The JSON value policy of request bodies holds for fixture documents too. The screen
        # first: the policy's own walk would copy a large document.
        if not is_plain(document):
            document = check_value(document)
    except InvalidInput as exc:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in exc.loc[1:])
        raise LoadError(f"{where.lstrip('.')}: {exc.message}") from None
    unknown = sorted(set(document) - set(SECTION_ORDER))
    if unknown:
        raise LoadError(f"unknown sections: {', '.join(unknown)}")
    context = LoadContext(session=session, organization_id=organization_id, settings=settings)
    created: dict[str, list[Any]] = {}
    for name in SECTION_ORDER:
        if name not in document:
            continue
        items = document[name]
        if not isinstance(items, list):
            raise LoadError(f"{name} must be a list")
        loader = _SECTIONS.get(name)
        if loader is None:
            raise LoadError(f"section {name} is not supported yet")
        try:
            created[name] = await loader(context, items)
            await session.flush()
        except IntegrityError as exc:
            raise conflict(name, exc) from None
    return created


def conflict(name: str, exc: IntegrityError) -> LoadError:
    return LoadError(f"{name}: conflicts with existing data ({exc.orig})")


_EMPTY_JSON: dict[type, str] = {type(None): "null", list: "[]", dict: "{}"}

#: SQLite's page cache during a bulk insert (the default is 2 MB).
SQLITE_BULK_CACHE_KIB = 64 * 1024


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

    @classmethod
    @contextlib.asynccontextmanager
    async def of(cls, session: AsyncSession) -> AsyncIterator[BulkInsert]:
        await session.flush()  # rows the ORM still holds go first: ours may refer to them
        connection = await session.connection()
        raw = await connection.get_raw_connection()
        bulk = cls(connection.dialect.name, raw.driver_connection)
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

    def uuid(self, value: Any) -> Any:
        # SQLite has no uuid type: SQLAlchemy's Uuid stores the 32 hex digits.
        if value is None or self.backend != "sqlite":
            return value
        return value.hex

    def timestamp(self, value: datetime | None) -> Any:
        """UTCDateTime's storage: UTC; on SQLite naive text in SQLAlchemy's format."""
        if value is None:
            return None
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        if self.backend != "sqlite":
            return value
        # SQLAlchemy's "%Y-%m-%d %H:%M:%S.%f"; isoformat pads the year to four digits too.
        return value.replace(tzinfo=None).isoformat(" ", "microseconds")

    @staticmethod
    def json(value: Any) -> str:
        # None included: SQLAlchemy's JSON type stores Python None as JSON null, not SQL NULL.
        # Most optional columns of an imported row are empty: their text is known.
        if not value and (text := _EMPTY_JSON.get(type(value))) is not None:
            return text
        return jsonvalues.dumps(value)

    async def insert(self, table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        if self.backend == "sqlite":
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
            return
        statement = f"COPY {table} ({', '.join(columns)})"
        try:
            await self.driver.copy_records_to_table(table, records=rows, columns=columns)
        except asyncpg.IntegrityConstraintViolationError as exc:
            raise IntegrityError(statement, None, _DriverError(f"{type(exc)}: {exc}")) from None
        except asyncpg.PostgresError as exc:
            raise DBAPIError(statement, None, _DriverError(f"{type(exc)}: {exc}")) from None
