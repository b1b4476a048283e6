"""From catalog rows to SQLAlchemy ``Table`` objects, and the DDL that creates and drops them.

A user table is a real table ``udt_<catalog id>``: managed columns first (organization_id, id,
created_at, updated_at), then one column per declared column under its declared name (validated
against ``^[a-z][a-z0-9_]*$`` at creation, and quoted by SQLAlchemy like every identifier).
Constraints and indexes are named from the catalog id only, never from user text.

``Table`` objects are cached per process, keyed by (catalog id, created_at, updated_at). Every
request still reads the catalog row (one indexed lookup by organization and name), so a table
created, dropped or recreated by another process is seen at once; the cache only saves building
the objects and lets SQLAlchemy reuse its compiled statements.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    UniqueConstraint,
    bindparam,
    select,
)
from sqlalchemy.exc import InternalError, OperationalError, ProgrammingError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from callplane.custom_data.types import (
    ID,
    REFERENCE,
    TIMESTAMP,
    TYPES,
    ColumnType,
    Int32Type,
)
from callplane.errors import InvalidInput, NotFound
from callplane.models.base import USER_TABLE_PREFIX, UTCDateTime
from callplane.models.custom_data import CustomTable
from callplane.tenancy import owned_by, select_owned

TABLE_NAME = re.compile(r"[A-Za-z0-9_-]{1,63}")
RESERVED_TABLE_NAMES = frozenset({"tables"})
MANAGED_COLUMNS: dict[str, ColumnType] = {
    "id": ID,
    "organization_id": Int32Type(),
    "created_at": TIMESTAMP,
    "updated_at": TIMESTAMP,
}
_CACHE_SIZE = 512
_STATEMENTS_PER_TABLE = 256


def physical_name(table_id: int) -> str:
    return f"{USER_TABLE_PREFIX}{table_id}"


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    name: str
    type: str
    required: bool = False
    unique: bool = False
    indexed: bool = False
    references: str | None = None
    references_id: int | None = None

    @property
    def kind(self) -> ColumnType:
        return REFERENCE if self.references_id is not None else TYPES[self.type]

    def wire(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "required": self.required,
            "unique": self.unique,
            "indexed": self.indexed,
            "references": self.references,
        }


@dataclass(eq=False)
class TableSchema:
    id: int
    organization_id: int
    name: str
    columns: tuple[ColumnSpec, ...]
    indexes: tuple[tuple[str, ...], ...]
    created_at: datetime
    updated_at: datetime
    table: Table
    declared: dict[str, ColumnSpec] = field(init=False)
    #: every column a filter or sort may name (declared and managed) → its type
    kinds: dict[str, ColumnType] = field(init=False)
    #: the columns of a record, in the order they appear in responses
    selectable: list[Column[Any]] = field(init=False)
    #: statements built once per shape and reused: SQLAlchemy then skips building them and
    #: computing their cache keys (~0.1 ms each) on every request
    _statements: dict[Any, Any] = field(init=False, default_factory=dict)

    def statement(self, key: Any, build: Callable[[], Any]) -> Any:
        found = self._statements.get(key)
        if found is None:
            if len(self._statements) >= _STATEMENTS_PER_TABLE:
                self._statements.clear()
            found = self._statements[key] = build()
        return found

    def __post_init__(self) -> None:
        self.declared = {c.name: c for c in self.columns}
        c = self.table.c
        self.selectable = [
            c.id,
            c.organization_id,
            *(c[s.name] for s in self.columns),
            c.created_at,
            c.updated_at,
        ]
        self.kinds = {**MANAGED_COLUMNS, **{c.name: c.kind for c in self.columns}}

    def wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "columns": [c.wire() for c in self.columns],
            "indexes": [list(i) for i in self.indexes],
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


def build_table(
    table_id: int,
    columns: tuple[ColumnSpec, ...],
    indexes: tuple[tuple[str, ...], ...],
    dialect: str,
) -> Table:
    """The ``Table`` of a user table, with its constraints; in a MetaData of its own."""
    metadata = MetaData()
    name = physical_name(table_id)
    # Referenced tables appear as stubs (just their id) so foreign keys resolve for DDL.
    for ref_id in sorted({c.references_id for c in columns if c.references_id is not None}):
        if ref_id != table_id:
            Table(physical_name(ref_id), metadata, Column("id", ID.sql_type(), primary_key=True))
    table = Table(
        name,
        metadata,
        Column("organization_id", Integer(), nullable=False),
        Column("id", ID.sql_type(), primary_key=True, autoincrement=True),
        Column("created_at", UTCDateTime(), nullable=False),
        Column("updated_at", UTCDateTime(), nullable=False),
    )
    for position, spec in enumerate(columns):
        args: list[Any] = []
        if spec.references_id is not None:
            args.append(
                ForeignKey(f"{physical_name(spec.references_id)}.id", name=f"{name}_fk{position}")
            )
        table.append_column(
            Column(spec.name, spec.kind.sql_type(), *args, nullable=not spec.required)
        )
        if spec.unique:
            table.append_constraint(
                UniqueConstraint(
                    table.c.organization_id, table.c[spec.name], name=f"{name}_uq{position}"
                )
            )
    declared = {c.name: c for c in columns}
    wanted = [(c.name,) for c in columns if c.indexed] + list(indexes)
    for position, index_columns in enumerate(dict.fromkeys(wanted)):
        elements: list[Any] = [table.c.organization_id]
        for column_name in index_columns:
            element: ColumnElement[Any] = table.c[column_name]
            # PostgreSQL puts NULLs last ascending; SQLite puts them first. List queries use
            # SQLite's order on both, and PostgreSQL indexes are built to match it.
            if dialect == "postgresql" and not declared[column_name].required:
                element = element.asc().nulls_first()
            elements.append(element)
        # id closes every index: it breaks sort ties (SQLite's rowid does so implicitly).
        elements.append(table.c.id)
        Index(f"{name}_ix{position}", *elements)
    return table


def _specs(raw: list[Any]) -> tuple[ColumnSpec, ...]:
    return tuple(ColumnSpec(**item) for item in raw)


_cache: OrderedDict[tuple[int, datetime, datetime, str], TableSchema] = OrderedDict()


def schema_from_row(row: Any, dialect: str) -> TableSchema:
    key = (row.id, row.created_at, row.updated_at, dialect)
    cached = _cache.get(key)
    if cached is not None:
        _cache.move_to_end(key)
        return cached
    columns = _specs(row.columns)
    indexes = tuple(tuple(i) for i in row.indexes or ())
    schema = TableSchema(
        id=row.id,
        organization_id=row.organization_id,
        name=row.name,
        columns=columns,
        indexes=indexes,
        created_at=row.created_at,
        updated_at=row.updated_at,
        table=build_table(row.id, columns, indexes, dialect),
    )
    _cache[key] = schema
    if len(_cache) > _CACHE_SIZE:
        _cache.popitem(last=False)
    return schema


_catalog = CustomTable.__table__


def check_table_name(name: str) -> None:
    if not TABLE_NAME.fullmatch(name):
        raise InvalidInput(
            "table_name must match ^[A-Za-z0-9_-]+$ and be at most 63 characters",
            loc=("path", "table_name"),
        )


_KEY_COLUMNS = (_catalog.c.id, _catalog.c.created_at, _catalog.c.updated_at)
_BY_NAME = owned_by(_catalog, bindparam("org")) & (_catalog.c.name == bindparam("key"))
_BY_ID = owned_by(_catalog, bindparam("org")) & (_catalog.c.id == bindparam("key"))
_KEY_QUERIES = {
    (by, lock): (
        select(*_KEY_COLUMNS).where(condition).with_for_update()
        if lock
        else select(*_KEY_COLUMNS).where(condition)
    )
    for by, condition in (("name", _BY_NAME), ("id", _BY_ID))
    for lock in (False, True)
}
_FULL_ROW = select_owned(_catalog, bindparam("org")).where(_catalog.c.id == bindparam("id"))


async def _resolve(
    session: AsyncSession, by: str, organization_id: int, key: int | str, lock: bool
) -> TableSchema:
    """The schema of the matching catalog row: only its version key is read per request; the
    column definitions are read when this process has not built that version yet."""
    params = {"org": organization_id, "key": key}
    found = (await session.execute(_KEY_QUERIES[(by, lock)], params)).first()
    if found is None:
        raise NotFound("Table not found")
    dialect = session.get_bind().dialect.name
    cache_key = (found.id, found.created_at, found.updated_at, dialect)
    cached = _cache.get(cache_key)
    if cached is not None:
        _cache.move_to_end(cache_key)
        return cached
    row = (await session.execute(_FULL_ROW, {"org": organization_id, "id": found.id})).one()
    return schema_from_row(row, dialect)


async def find_table(
    session: AsyncSession, organization_id: int, name: str, *, lock: bool = False
) -> TableSchema:
    """The organization's table called ``name`` (422 for a malformed name, 404 when absent)."""
    check_table_name(name)
    if name in RESERVED_TABLE_NAMES:
        raise NotFound("Table not found")
    return await _resolve(session, "name", organization_id, name, lock)


async def find_table_by_id(
    session: AsyncSession, organization_id: int, table_id: int, *, lock: bool = False
) -> TableSchema:
    if not 1 <= table_id <= 2**31 - 1:
        raise NotFound("Table not found")
    return await _resolve(session, "id", organization_id, table_id, lock)


async def list_tables(session: AsyncSession, organization_id: int) -> list[TableSchema]:
    query = select_owned(_catalog, organization_id).order_by(_catalog.c.name, _catalog.c.id)
    dialect = session.get_bind().dialect.name
    return [schema_from_row(row, dialect) for row in await session.execute(query)]


_MISSING_TABLE = ("no such table", "does not exist", "could not open relation")


@contextmanager
def dropped_table_is_not_found() -> Iterator[None]:
    """A table dropped by another request between our catalog read and our statement (possible
    on PostgreSQL, where each statement takes a fresh snapshot) is a missing table, not a 500."""
    try:
        yield
    except (OperationalError, ProgrammingError, InternalError) as exc:
        code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
        if code == "42P01" or any(text in str(exc.orig).lower() for text in _MISSING_TABLE):
            raise NotFound("Table not found") from None
        raise


async def create_physical(session: AsyncSession, table: Table) -> None:
    connection = await session.connection()
    await connection.run_sync(lambda sync: table.create(sync, checkfirst=False))


async def drop_physical(session: AsyncSession, table: Table) -> None:
    connection = await session.connection()
    await connection.run_sync(lambda sync: table.drop(sync, checkfirst=False))
