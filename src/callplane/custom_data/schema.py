"""From catalog rows to SQLAlchemy ``Table`` objects, and the DDL that creates and drops them.

A user table is a real table ``udt_<catalog id>``: managed columns first (organization_id, id,
created_at, updated_at), then one column per declared column under its declared name (validated
against ``^[a-z][a-z0-9_]*$`` at creation, and quoted by SQLAlchemy like every identifier).
Constraints and indexes are named from the catalog id only, never from user text.

Which schema a name means, and the per-process cache of built schemas, is ``catalog``.
"""

from __future__ import annotations

import re
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
    #: statements built and compiled once per shape (``callplane.kit.driver.Prepared``) and reused
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

    @property
    def has_references(self) -> bool:
        return any(c.references_id is not None for c in self.columns)

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


def specs_from_json(raw: list[Any]) -> tuple[ColumnSpec, ...]:
    return tuple(ColumnSpec(**item) for item in raw)


def check_table_name(name: str) -> None:
    if not TABLE_NAME.fullmatch(name):
        raise InvalidInput(
            "table_name must match ^[A-Za-z0-9_-]+$ and be at most 63 characters",
            loc=("path", "table_name"),
        )


_MISSING_TABLE = ("no such table", "does not exist", "could not open relation")


def is_missing_table(exc: Exception) -> bool:
    """The error of a statement on a table that no longer exists (either backend)."""
    if not isinstance(exc, OperationalError | ProgrammingError | InternalError):
        return False
    code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    return code == "42P01" or any(text in str(exc.orig).lower() for text in _MISSING_TABLE)


@contextmanager
def dropped_table_is_not_found() -> Iterator[None]:
    """A table dropped by another request between our catalog read and our statement (possible
    on PostgreSQL, where each statement takes a fresh snapshot) is a missing table, not a 500."""
    try:
        yield
    except (OperationalError, ProgrammingError, InternalError) as exc:
        if is_missing_table(exc):
            raise NotFound("Table not found") from None
        raise


async def create_physical(session: AsyncSession, table: Table) -> None:
    connection = await session.connection()
    await connection.run_sync(lambda sync: table.create(sync, checkfirst=False))


async def drop_physical(session: AsyncSession, table: Table) -> None:
    connection = await session.connection()
    await connection.run_sync(lambda sync: table.drop(sync, checkfirst=False))
