"""The per-process catalog of custom data tables: which ``TableSchema`` a name or an id means.

One ``Catalog`` belongs to each ``Runtime`` (``callplane.runtime``); a fixture load makes its
own. It keeps two things:

- schemas by version key (catalog id, created_at, updated_at): built once from a catalog row,
  so SQLAlchemy ``Table`` objects and the statements compiled from them are reused;
- for the hot record routes, the schema last seen under each (organization, name). That entry is
  used *without* reading the catalog first: the record statements built from it compare the
  catalog row's id, organization and version in the same statement (``records``), so a table
  dropped or recreated by another process is noticed by the statement itself, and the request is
  then answered from a fresh read of the catalog (``Catalog.fresh``).

A catalog row never changes after its table is created (there is no ALTER), and ids never
repeat, so the version key names one schema for good.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import bindparam, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.custom_data.schema import (
    RESERVED_TABLE_NAMES,
    TableSchema,
    build_table,
    check_table_name,
    is_missing_table,
    specs_from_json,
)
from callplane.errors import InvalidInput, NotFound
from callplane.kit.driver import driver_connection
from callplane.kit.tenancy import owned_by, select_owned
from callplane.models.custom_data import CustomTable

_VERSIONS = 512
_NAMES = 4096

_catalog = CustomTable.__table__
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

ResultT = TypeVar("ResultT")


class Catalog:
    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self._versions: OrderedDict[tuple[int, datetime, datetime], TableSchema] = OrderedDict()
        self._names: dict[tuple[int, str], TableSchema] = {}

    @classmethod
    def for_session(cls, session: AsyncSession) -> Catalog:
        """A catalog of its own, for work outside a served app (fixture loads)."""
        return cls(session.get_bind().dialect.name)

    def from_row(self, row: Any) -> TableSchema:
        key = (row.id, row.created_at, row.updated_at)
        cached = self._versions.get(key)
        if cached is not None:
            self._versions.move_to_end(key)
            return cached
        columns = specs_from_json(row.columns)
        indexes = tuple(tuple(i) for i in row.indexes or ())
        schema = TableSchema(
            id=row.id,
            organization_id=row.organization_id,
            name=row.name,
            columns=columns,
            indexes=indexes,
            created_at=row.created_at,
            updated_at=row.updated_at,
            table=build_table(row.id, columns, indexes, self.dialect),
        )
        self._versions[key] = schema
        if len(self._versions) > _VERSIONS:
            self._versions.popitem(last=False)
        return schema

    async def _resolve(
        self, session: AsyncSession, by: str, organization_id: int, key: int | str, lock: bool
    ) -> TableSchema:
        """The schema of the matching catalog row: only its version key is read; the column
        definitions are read when this process has not built that version yet."""
        params = {"org": organization_id, "key": key}
        found = (await session.execute(_KEY_QUERIES[(by, lock)], params)).first()
        if found is None:
            raise NotFound("Table not found")
        cached = self._versions.get((found.id, found.created_at, found.updated_at))
        if cached is not None:
            return cached
        row = (await session.execute(_FULL_ROW, {"org": organization_id, "id": found.id})).one()
        return self.from_row(row)

    async def find_table(
        self, session: AsyncSession, organization_id: int, name: str, *, lock: bool = False
    ) -> TableSchema:
        """The organization's table called ``name`` (422 for a malformed name, 404 when absent),
        read from the catalog now."""
        check_table_name(name)
        if name in RESERVED_TABLE_NAMES:
            raise NotFound("Table not found")
        schema = await self._resolve(session, "name", organization_id, name, lock)
        self._remember(schema)
        return schema

    async def find_table_by_id(
        self, session: AsyncSession, organization_id: int, table_id: int, *, lock: bool = False
    ) -> TableSchema:
        if not 1 <= table_id <= 2**31 - 1:
            raise NotFound("Table not found")
        return await self._resolve(session, "id", organization_id, table_id, lock)

    async def list_tables(self, session: AsyncSession, organization_id: int) -> list[TableSchema]:
        query = select_owned(_catalog, organization_id).order_by(_catalog.c.name, _catalog.c.id)
        return [self.from_row(row) for row in await session.execute(query)]

    def remembered(self, organization_id: int, name: str) -> TableSchema | None:
        """The schema last seen under ``name``, for statements that check the catalog row
        themselves; None when unknown, or when the table has references (those are checked
        with the session before the record statement)."""
        schema = self._names.get((organization_id, name))
        return None if schema is None or schema.has_references else schema

    def forget(self, organization_id: int, name: str) -> None:
        self._names.pop((organization_id, name), None)

    def _remember(self, schema: TableSchema) -> None:
        if len(self._names) >= _NAMES:
            self._names.clear()
        self._names[(schema.organization_id, schema.name)] = schema

    async def with_table(
        self,
        session: AsyncSession,
        organization_id: int,
        name: str,
        operation: Callable[[TableSchema], Awaitable[ResultT]],
        settled: Callable[[ResultT], bool] | None = None,
    ) -> ResultT:
        """Run ``operation`` (statements of ``records`` or ``query``, which check the catalog row
        themselves) on the schema last seen under ``name``, without reading the catalog first.

        When the operation finds nothing (raises NotFound, or returns what ``settled`` says is
        not settled: an empty list page), refuses the body before running its statement, or
        meets a missing table, the catalog is read: for an unchanged table the answer stands; a
        changed one gets the operation again on its new schema. The operation must be the
        request's first write: on a missing table PostgreSQL aborts the transaction, which is
        rolled back (losing only reads) before the retry. Tables with references always read
        the catalog first: their reference check runs before the record statement.
        """
        cached = self.remembered(organization_id, name)
        if cached is None:
            return await self.fresh(session, organization_id, name, operation)
        driver = await driver_connection(session)
        ran = driver.executed
        try:
            result = await operation(cached)
        except InvalidInput as error:
            if driver.executed != ran:
                raise  # refused by the database: its table exists, so the schema is current
            return await self._recheck(session, cached, operation, error)
        except NotFound as error:
            return await self._recheck(session, cached, operation, error)
        except DBAPIError as error:
            if not is_missing_table(error):
                raise
            self.forget(organization_id, name)
            await session.rollback()
            return await self.fresh(session, organization_id, name, operation)
        if settled is None or settled(result):
            return result
        current = await self.find_table(session, organization_id, name)
        if (current.id, current.updated_at) == (cached.id, cached.updated_at):
            return result
        return await self._run(current, operation)

    async def _recheck(
        self,
        session: AsyncSession,
        cached: TableSchema,
        operation: Callable[[TableSchema], Awaitable[ResultT]],
        error: Exception,
    ) -> ResultT:
        current = await self.find_table(session, cached.organization_id, cached.name)
        if (current.id, current.updated_at) == (cached.id, cached.updated_at):
            raise error  # the table is current: the operation's answer stands
        return await self._run(current, operation)

    async def fresh(
        self,
        session: AsyncSession,
        organization_id: int,
        name: str,
        operation: Callable[[TableSchema], Awaitable[ResultT]],
    ) -> ResultT:
        """Read the catalog, then run ``operation`` on the table found."""
        return await self._run(await self.find_table(session, organization_id, name), operation)

    async def _run(
        self, schema: TableSchema, operation: Callable[[TableSchema], Awaitable[ResultT]]
    ) -> ResultT:
        try:
            return await operation(schema)
        except DBAPIError as error:
            if is_missing_table(error):
                # Dropped by another request between our catalog read and our statement.
                self.forget(schema.organization_id, schema.name)
                raise NotFound("Table not found") from None
            raise
