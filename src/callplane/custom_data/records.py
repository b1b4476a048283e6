"""Records of a user table: create (batch), read, replace, patch, delete (SPEC,
docs/api-contract.md).

Every statement is SQLAlchemy Core on the table's cached ``Table``: identifiers are quoted by the
toolkit, values are bound. Managed columns (id, organization_id, created_at, updated_at) are set
here and ignored in bodies, as are names that are not declared columns.

Reading, replacing, patching and deleting one record are the hot paths: each is one statement,
compiled once per table and shape and run on the driver connection (``callplane.kit.driver``). Each
also checks, in the same statement, that the table's catalog row is still the one the schema was
built from (``current_catalog``), so it may be given a schema taken from the per-process catalog
without reading the catalog first (``catalog.Catalog.with_table``). Batch inserts, the
reference checks and deleting every record stay on the session: they vary in shape and are not
where requests spend their time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Row,
    bindparam,
    column,
    delete,
    exists,
    insert,
    or_,
    select,
    table,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from callplane.custom_data.schema import TableSchema, physical_name
from callplane.custom_data.types import INT64_MAX, TimestampType
from callplane.errors import CallplaneError, Conflict, InvalidInput, NotFound
from callplane.kit.db import sync_id_sequence
from callplane.kit.driver import Db, Prepared, dialect_of, driver_of
from callplane.kit.tenancy import delete_owned, owned_by, select_owned
from callplane.models.base import utcnow
from callplane.models.custom_data import CustomTable

SOURCE_COLUMN = re.compile(r"[a-z][a-z0-9_]{0,62}")


def record(row: Row[Any]) -> dict[str, Any]:
    return row._asdict()


def clean_values(
    schema: TableSchema, body: Mapping[str, Any], *, partial: bool, where: str = ""
) -> dict[str, Any]:
    """Declared columns of a write body, each validated against its type.

    ``partial`` (PATCH): omitted columns are left out; otherwise they are null (POST, PUT).
    """
    values: dict[str, Any] = {}
    for name, spec in schema.declared.items():
        if name not in body:
            if partial:
                continue
            value = None
        else:
            value = body[name]
        if value is None:
            if spec.required:
                raise InvalidInput(f"{where}{name}: is required", loc=("body", name))
            values[name] = None
            continue
        try:
            values[name] = spec.kind.validate(name, value)
        except InvalidInput as exc:
            raise InvalidInput(f"{where}{exc.message}", loc=exc.loc) from None
    return values


async def check_references(
    session: AsyncSession, schema: TableSchema, rows: Iterable[Mapping[str, Any]]
) -> None:
    """A reference must name an existing record of the referenced table (422 otherwise).

    The foreign key is the backstop for a record deleted concurrently.
    """
    rows = list(rows)
    for spec in schema.columns:
        if spec.references_id is None:
            continue
        wanted = {r[spec.name] for r in rows if r.get(spec.name) is not None}
        if not wanted:
            continue
        target = table(physical_name(spec.references_id), column("id"), column("organization_id"))
        query = select_owned(target, schema.organization_id, target.c.id)
        found = set(await session.scalars(query.where(target.c.id.in_(wanted))))
        missing = sorted(wanted - found)
        if missing:
            raise InvalidInput(
                f"{spec.name}: no record {missing[0]} in table {spec.references}",
                loc=("body", spec.name),
            )


def integrity_error(exc: IntegrityError, *, deleting: bool = False) -> CallplaneError:
    """The domain error behind a constraint violation (both backends' messages)."""
    message = str(exc.orig).lower()
    if "foreign key" in message:
        if deleting:
            return Conflict("The record is referenced by records of another table")
        return InvalidInput("A referenced record does not exist", loc=("body",))
    if "unique" in message or "duplicate key" in message:
        return Conflict("A record with the same value in a unique column already exists")
    if "not null" in message or "not-null" in message:
        return InvalidInput("A required column is missing", loc=("body",))
    raise exc


async def create_records(
    session: AsyncSession,
    schema: TableSchema,
    bodies: list[dict[str, Any]],
    *,
    keep_ids: bool = False,
) -> list[dict[str, Any]]:
    """Insert a batch, all or nothing. ``keep_ids`` (fixture loader only) keeps explicit ids."""
    now = utcnow()
    rows = []
    for index, body in enumerate(bodies):
        values = clean_values(schema, body, partial=False, where=f"records[{index}].")
        values["organization_id"] = schema.organization_id
        values["created_at"] = values["updated_at"] = now
        if keep_ids and body.get("id") is not None:
            values["id"] = body["id"]
        rows.append(values)
    await check_references(session, schema, rows)
    t = schema.table
    if keep_ids and any("id" in r for r in rows):
        # Explicit ids come one row at a time: a multi-row INSERT needs the same keys per row.
        created = []
        for values in rows:
            stmt = insert(t).values(values).returning(*schema.selectable)
            created.append(record((await _write(session, stmt)).one()))
            if "id" in values:
                # PostgreSQL's sequence must move past an explicit id before the next default.
                await sync_id_sequence(session, t.name)
        return created
    stmt = insert(t).returning(*schema.selectable, sort_by_parameter_order=True)
    try:
        result = await session.execute(stmt, rows)
    except IntegrityError as exc:
        raise integrity_error(exc) from None
    return [record(r) for r in result]


async def _write(session: AsyncSession, stmt: Any, deleting: bool = False) -> Any:
    try:
        return await session.execute(stmt)
    except IntegrityError as exc:
        # The request's unit of work rolls back on the raised error, so rows a batch wrote
        # before the failing one (SQLite runs it as several statements) are undone too.
        raise integrity_error(exc, deleting=deleting) from None


def _check_id(record_id: int) -> None:
    # A well-formed id that no record can have is simply not found.
    if not 1 <= record_id <= INT64_MAX:
        raise NotFound("Record not found")


_catalog = CustomTable.__table__


def current_catalog(schema: TableSchema) -> ColumnElement[bool]:
    """The table's catalog row is still the version its schema was built from."""
    return exists().where(
        owned_by(_catalog, bindparam("org")),
        _catalog.c.id == bindparam("table_id", schema.id, type_=_catalog.c.id.type),
        _catalog.c.updated_at
        == bindparam("version", schema.updated_at, type_=_catalog.c.updated_at.type),
    )


def _by_id(schema: TableSchema) -> list[Any]:
    t = schema.table
    return [t.c.id == bindparam("rid"), owned_by(t, bindparam("org")), current_catalog(schema)]


def _prepared(db: Db, schema: TableSchema, key: Any, build: Any) -> Prepared:
    prepared: Prepared = schema.statement(key, lambda: Prepared.compile(build(), dialect_of(db)))
    return prepared


async def _references(db: Db, schema: TableSchema, values: dict[str, Any]) -> None:
    if schema.has_references:
        # Tables with references are only ever given with the request's session.
        assert isinstance(db, AsyncSession)
        await check_references(db, schema, [values])


async def _run(
    db: Db, prepared: Prepared, params: dict[str, Any], deleting: bool = False
) -> dict[str, Any] | None:
    driver = await driver_of(db)
    try:
        return await driver.fetchone(prepared, params)
    except IntegrityError as exc:
        raise integrity_error(exc, deleting=deleting) from None


async def get_record(db: Db, schema: TableSchema, record_id: int) -> dict[str, Any]:
    _check_id(record_id)
    prepared = _prepared(
        db, schema, "get", lambda: select(*schema.selectable).where(*_by_id(schema))
    )
    row = await _run(db, prepared, {"rid": record_id, "org": schema.organization_id})
    if row is None:
        raise NotFound("Record not found")
    return row


async def replace_record(
    db: Db, schema: TableSchema, record_id: int, body: Mapping[str, Any]
) -> dict[str, Any]:
    """PUT: every declared column is replaced; omitted ones become null."""
    _check_id(record_id)
    values = clean_values(schema, body, partial=False)
    await _references(db, schema, values)
    return await _update(db, schema, record_id, values, None, {})


def check_source_column(schema: TableSchema, name: str, values: Mapping[str, Any]) -> datetime:
    """The sourceUpdatedAtColumn rules (SPEC PATCH rule 2): a declared TIMESTAMP column, and a
    non-null valid timestamp for it in the body."""
    if not SOURCE_COLUMN.fullmatch(name):
        raise InvalidInput(
            "sourceUpdatedAtColumn must match ^[a-z][a-z0-9_]*$ and be at most 63 characters",
            loc=("query", "sourceUpdatedAtColumn"),
        )
    spec = schema.declared.get(name)
    if spec is None or not isinstance(spec.kind, TimestampType):
        raise InvalidInput(
            f"sourceUpdatedAtColumn: {name} is not a TIMESTAMP column of the table",
            loc=("query", "sourceUpdatedAtColumn"),
        )
    value = values.get(name)
    if value is None:
        raise InvalidInput(f"{name}: a non-null timestamp is required", loc=("body", name))
    assert isinstance(value, datetime)
    return value


async def patch_record(
    db: Db,
    schema: TableSchema,
    record_id: int,
    body: Mapping[str, Any],
    source_column: str | None = None,
) -> dict[str, Any]:
    """PATCH. With ``source_column`` the comparison and the write are one statement:
    ``UPDATE … WHERE id AND (col IS NULL OR col < :supplied) RETURNING …``."""
    values = clean_values(schema, body, partial=True)
    params: dict[str, Any] = {}
    if source_column is not None:
        params["supplied"] = check_source_column(schema, source_column, values)
    _check_id(record_id)
    if not values:
        return await get_record(db, schema, record_id)
    await _references(db, schema, values)
    return await _update(db, schema, record_id, values, source_column, params)


async def _update(
    db: Db,
    schema: TableSchema,
    record_id: int,
    values: dict[str, Any],
    source_column: str | None,
    params: dict[str, Any],
) -> dict[str, Any]:
    values["updated_at"] = utcnow()
    names = tuple(values)
    params.update({f"v_{name}": value for name, value in values.items()})
    params["rid"] = record_id
    params["org"] = schema.organization_id

    def build() -> Any:
        t = schema.table
        conditions = _by_id(schema)
        if source_column is not None:
            stored = t.c[source_column]
            conditions.append(or_(stored.is_(None), stored < bindparam("supplied")))
        new_values: dict[Any, Any] = {t.c[name]: bindparam(f"v_{name}") for name in names}
        return update(t).where(*conditions).values(new_values).returning(*schema.selectable)

    prepared = _prepared(db, schema, ("update", names, source_column), build)
    row = await _run(db, prepared, params)
    if row is not None:
        return row
    if source_column is not None:
        probe = _prepared(
            db, schema, "exists", lambda: select(schema.table.c.id).where(*_by_id(schema))
        )
        if await _run(db, probe, {"rid": record_id, "org": schema.organization_id}):
            raise Conflict(
                f"{source_column}: the stored timestamp is equal or newer; nothing changed"
            )
    raise NotFound("Record not found")


async def delete_record(db: Db, schema: TableSchema, record_id: int) -> None:
    _check_id(record_id)
    t = schema.table
    prepared = _prepared(
        db,
        schema,
        "delete",
        lambda: delete(t).where(*_by_id(schema)).returning(t.c.id),
    )
    params = {"rid": record_id, "org": schema.organization_id}
    if await _run(db, prepared, params, deleting=True) is None:
        raise NotFound("Record not found")


async def delete_all_records(session: AsyncSession, schema: TableSchema) -> int:
    t = schema.table
    stmt = delete_owned(t, schema.organization_id)
    result = await _write(session, stmt, deleting=True)
    return int(result.rowcount)
