"""``query_table`` and ``insert_record``: the organization's custom data tables, through the
same services as ``POST /data/{table}/query`` and ``POST /data/{table}`` (same validation). The
table is the config's, never the brain's to choose, and it is looked up in the call's own
organization: an agent cannot read another organization's data, whatever the brain asks."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from callplane.custom_data import query, records, schema
from callplane.errors import CallplaneError
from callplane.tools import Tool, ToolContext, ToolError, ToolResult
from callplane.tools.config import ToolConfig

#: The most records the brain sees of a query (docs/tools.md).
MAX_RECORDS = 20


def _reason(exc: CallplaneError) -> str:
    return "; ".join(exc.errors) or exc.message


def _shown(record: dict[str, Any]) -> dict[str, Any]:
    """A record as the brain sees it: without the tenancy key."""
    return {str(k): v for k, v in record.items() if k != "organization_id"}


TableName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,63}$")]


class QueryTableConfig(ToolConfig):
    type: Literal["query_table"]
    table: TableName
    columns: Annotated[
        list[Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,62}$")]],
        Field(max_length=200),
    ] = []


class InsertRecordConfig(ToolConfig):
    type: Literal["insert_record"]
    table: TableName


class QueryTable(Tool):
    config_model = QueryTableConfig
    default_description = "Look records up in a table."

    def parameters(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "filters": {
                    "type": "array",
                    "description": 'conditions, all must hold: {"column", "op" (eq ne lt lte '
                    'gt gte in contains is_null), "value"}',
                    "items": {"type": "object"},
                    "maxItems": 20,
                },
                "sort_by": {"type": "string"},
                "sort_direction": {"enum": ["asc", "desc"]},
            },
        }

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        runtime, organization_id = context.need_runtime()
        body = {**arguments, "page": 1, "per_page": MAX_RECORDS}
        columns = self.config.get("columns")
        try:
            async with runtime.db.session(write=False) as session:
                table = await runtime.catalog.find_table(
                    session, organization_id, str(self.config.get("table"))
                )
                with schema.dropped_table_is_not_found():
                    page = await query.query_records(session, table, body)
        except CallplaneError as exc:
            raise ToolError(_reason(exc)) from None
        found = [_shown(r) for r in page.get("records") or []]
        if columns:
            keep = {"id", *columns}
            found = [{k: v for k, v in r.items() if k in keep} for r in found]
        return ToolResult({"records": found[:MAX_RECORDS], "total_count": page.get("total_count")})


class InsertRecord(Tool):
    config_model = InsertRecordConfig
    default_description = "Create one record in a table."

    def parameters(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"record": {"type": "object", "description": "the column values"}},
            "required": ["record"],
        }

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        runtime, organization_id = context.need_runtime()
        try:
            async with runtime.db.session(write=True) as session:
                table = await runtime.catalog.find_table(
                    session, organization_id, str(self.config.get("table"))
                )
                with schema.dropped_table_is_not_found():
                    [created] = await records.create_records(session, table, [arguments["record"]])
                await session.commit()
        except CallplaneError as exc:
            raise ToolError(_reason(exc)) from None
        return ToolResult({"record": _shown(created)})
