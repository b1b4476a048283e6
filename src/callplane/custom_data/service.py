"""Tables: create, list, read and delete user-defined tables (docs/api-contract.md).

Creating a table writes its catalog row and runs its CREATE TABLE (with NOT NULL, UNIQUE, index
and FOREIGN KEY constraints) in the request's transaction: both backends have transactional DDL,
so a failure leaves neither behind.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Table, literal, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.custom_data.catalog import Catalog
from callplane.custom_data.query import LIST_PARAMETERS
from callplane.custom_data.schema import (
    MANAGED_COLUMNS,
    RESERVED_TABLE_NAMES,
    TABLE_NAME,
    ColumnSpec,
    TableSchema,
    build_table,
    create_physical,
    drop_physical,
    physical_name,
)
from callplane.custom_data.schemas import TableIn
from callplane.custom_data.types import TYPES
from callplane.errors import Conflict, InvalidInput
from callplane.kit.tenancy import delete_owned, select_owned, update_owned
from callplane.models.base import utcnow
from callplane.models.custom_data import CustomTable

COLUMN_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
MAX_INDEX_COLUMNS = 8

_catalog: Table = CustomTable.__table__  # type: ignore[assignment]


def _bad(message: str, *loc: str | int) -> InvalidInput:
    return InvalidInput(message, loc=("body", *loc))


#: Names PostgreSQL gives every table's system columns (and SQLite's rowid aliases): a column
#: so named cannot be created there, so it is refused on both backends alike.
SYSTEM_COLUMNS = frozenset({"xmin", "xmax", "cmin", "cmax", "ctid", "tableoid", "oid", "rowid"})


def _check_columns(body: TableIn) -> None:
    seen: set[str] = set()
    for position, column in enumerate(body.columns):
        where = f"columns[{position}]"
        if not COLUMN_NAME.fullmatch(column.name):
            raise _bad(
                f"{where}.name must match ^[a-z][a-z0-9_]*$ and be at most 63 characters",
                "columns",
                position,
                "name",
            )
        if (
            column.name in MANAGED_COLUMNS
            or column.name in LIST_PARAMETERS
            or column.name in SYSTEM_COLUMNS
        ):
            raise _bad(
                f"{where}.name: {column.name} is a reserved name", "columns", position, "name"
            )
        if column.name in seen:
            raise _bad(f"{where}.name: duplicate column {column.name}", "columns", position, "name")
        seen.add(column.name)
        if column.type.upper() not in TYPES:
            raise _bad(
                f"{where}.type must be one of {', '.join(TYPES)}", "columns", position, "type"
            )
        if column.references is not None and column.type.upper() != "INTEGER":
            raise _bad(
                f"{where}.type must be INTEGER for a column with references",
                "columns",
                position,
                "type",
            )
    for position, index in enumerate(body.indexes):
        if not 1 <= len(index) <= MAX_INDEX_COLUMNS or len(set(index)) != len(index):
            raise _bad(
                f"indexes[{position}] must name 1 to {MAX_INDEX_COLUMNS} distinct columns",
                "indexes",
                position,
            )
        unknown = [name for name in index if name not in seen]
        if unknown:
            raise _bad(
                f"indexes[{position}]: no column named {unknown[0]!r}"[:200], "indexes", position
            )


async def _referenced_ids(
    session: AsyncSession, organization_id: int, body: TableIn
) -> dict[str, int | None]:
    """Ids of the tables named by ``references`` (None: the table itself). Locked on PostgreSQL
    so a concurrent DELETE /data/tables/{id} cannot drop one between this check and the FK."""
    names = {c.references for c in body.columns if c.references is not None}
    found: dict[str, int | None] = {}
    others = names - {body.name}
    if others:
        rows = await session.execute(
            select_owned(_catalog, organization_id, _catalog.c.name, _catalog.c.id)
            .where(_catalog.c.name.in_(others))
            .with_for_update(read=True)
        )
        found.update({name: table_id for name, table_id in rows})
    if body.name in names:
        found[body.name] = None
    for position, column in enumerate(body.columns):
        if column.references is not None and column.references not in found:
            raise _bad(
                f"columns[{position}].references: no table named {column.references!r}"[:200],
                "columns",
                position,
                "references",
            )
    return found


def _column_specs(
    body: TableIn, references: dict[str, int | None], own_id: int
) -> list[ColumnSpec]:
    specs = []
    for column in body.columns:
        ref_id = None
        if column.references is not None:
            ref_id = references[column.references]
            ref_id = own_id if ref_id is None else ref_id
        specs.append(
            ColumnSpec(
                name=column.name,
                type=column.type.upper(),
                required=column.required,
                unique=column.unique,
                indexed=column.indexed,
                references=column.references,
                references_id=ref_id,
            )
        )
    return specs


def _spec_json(spec: ColumnSpec) -> dict[str, Any]:
    return {**spec.wire(), "references_id": spec.references_id}


async def create_table(
    session: AsyncSession, catalog: Catalog, organization_id: int, body: TableIn
) -> TableSchema:
    if not TABLE_NAME.fullmatch(body.name):
        raise _bad("name must match ^[A-Za-z0-9_-]+$ and be at most 63 characters", "name")
    if body.name in RESERVED_TABLE_NAMES:
        raise _bad(f"name: {body.name} is reserved", "name")
    _check_columns(body)
    exists = await session.scalar(
        select_owned(_catalog, organization_id, _catalog.c.id).where(_catalog.c.name == body.name)
    )
    if exists is not None:
        raise Conflict(f"A table named {body.name} already exists")
    references = await _referenced_ids(session, organization_id, body)
    now = utcnow()
    try:
        row = (
            await session.execute(
                _catalog.insert()
                .values(
                    organization_id=organization_id,
                    name=body.name,
                    columns=[],
                    indexes=[list(i) for i in body.indexes],
                    created_at=now,
                    updated_at=now,
                )
                .returning(_catalog.c.id)
            )
        ).one()
    except IntegrityError:
        # Another request created the same name since the check above.
        raise Conflict(f"A table named {body.name} already exists") from None
    specs = _column_specs(body, references, row.id)
    # The column list names the table's own id when it references itself, so it is written
    # once the id is known.
    await session.execute(
        update_owned(_catalog, organization_id)
        .where(_catalog.c.id == row.id)
        .values(columns=[_spec_json(s) for s in specs], updated_at=now)
    )
    dialect = session.get_bind().dialect.name
    await create_physical(
        session, build_table(row.id, tuple(specs), tuple(map(tuple, body.indexes)), dialect)
    )
    created = await session.execute(
        select_owned(_catalog, organization_id).where(_catalog.c.id == row.id)
    )
    return catalog.from_row(created.one())


async def delete_table(
    session: AsyncSession, catalog: Catalog, organization_id: int, table_id: int
) -> None:
    """DELETE /data/tables/{id}: 409 while it holds records or another table references it."""
    schema = await catalog.find_table_by_id(session, organization_id, table_id, lock=True)
    others = await session.execute(
        select_owned(_catalog, organization_id, _catalog.c.name, _catalog.c.columns).where(
            _catalog.c.id != table_id
        )
    )
    for name, columns in others:
        if any(c.get("references_id") == table_id for c in columns):
            raise Conflict(f"Table {schema.name} is referenced by table {name}")
    bind = session.get_bind()
    if bind.dialect.name == "postgresql":
        # Inserts that already read the catalog row wait here instead of writing into a table
        # that is about to be dropped. The name is built from an integer id, never user text.
        quoted = bind.dialect.identifier_preparer.quote(physical_name(table_id))
        await session.execute(text(f"LOCK TABLE {quoted} IN ACCESS EXCLUSIVE MODE"))
    holds = await session.scalar(select_owned(schema.table, organization_id, literal(1)).limit(1))
    if holds is not None:
        raise Conflict(f"Table {schema.name} still holds records; delete them first")
    await drop_physical(session, schema.table)
    await session.execute(delete_owned(_catalog, organization_id).where(_catalog.c.id == table_id))
    # Other processes notice through the record statements' catalog check (``records``).
    catalog.forget(organization_id, schema.name)
