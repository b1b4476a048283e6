"""Fixture section: tables, each created like POST /data/tables, then its records
(docs/api-contract.md#the-fixture-document).

Tables are created in document order, so a table may reference one that comes before it, and
its records may name records loaded before them. Record ids are kept when given.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from callplane.custom_data import records, service
from callplane.custom_data.catalog import Catalog
from callplane.custom_data.schemas import ColumnIn, TableIn
from callplane.custom_data.types import INT64_MAX
from callplane.errors import CallplaneError
from callplane.fixtures import LoadContext, LoadError, parse_items, section


class TableItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    columns: list[ColumnIn] = Field(min_length=1, max_length=200)
    indexes: list[list[str]] = Field(default_factory=list, max_length=32)
    records: list[dict[str, Any]] = []


@section("tables")
async def load_tables(context: LoadContext, items: list[Any]) -> list[Any]:
    created = []
    catalog = Catalog.for_session(context.session)
    for index, item in enumerate(parse_items("tables", items, TableItem)):
        for position, body in enumerate(item.records):
            record_id = body.get("id")
            if record_id is not None and (
                isinstance(record_id, bool)
                or not isinstance(record_id, int)
                or not 1 <= record_id <= INT64_MAX
            ):
                raise LoadError(f"tables[{index}].records[{position}].id: not a valid id")
        try:
            table = await service.create_table(
                context.session,
                catalog,
                context.organization_id,
                TableIn(name=item.name, columns=item.columns, indexes=item.indexes),
            )
            if item.records:
                await records.create_records(context.session, table, item.records, keep_ids=True)
        except CallplaneError as exc:
            raise LoadError(f"tables[{index}] ({item.name}): {exc.message}") from None
        created.append({"id": table.id, "name": table.name})
    return created
