"""Wire models of /v1/data (docs/api-contract.md#extension-routes). Records are open objects: one
field per column."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr

ColumnTypeName = Literal["TEXT", "INTEGER", "FLOAT", "BOOLEAN", "TIMESTAMP", "JSON"]


class ColumnIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: StrictStr = Field(max_length=200)
    type: StrictStr = Field(
        max_length=20, description="TEXT, INTEGER, FLOAT, BOOLEAN, TIMESTAMP, JSON"
    )
    required: StrictBool = False
    unique: StrictBool = False
    indexed: StrictBool = False
    references: StrictStr | None = Field(
        default=None,
        max_length=200,
        description="name of another table of the organization; the column holds its record ids",
    )


class TableIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: StrictStr = Field(max_length=200, description="^[A-Za-z0-9_-]+$, at most 63 characters")
    columns: list[ColumnIn] = Field(min_length=1, max_length=200)
    indexes: list[list[StrictStr]] = Field(
        default_factory=list, max_length=32, description="composite indexes, 1-8 columns each"
    )


class ColumnOut(BaseModel):
    name: str
    type: ColumnTypeName
    required: bool
    unique: bool
    indexed: bool
    references: str | None


class TableOut(BaseModel):
    id: int
    name: str
    columns: list[ColumnOut]
    indexes: list[list[str]]
    created_at: datetime
    updated_at: datetime


class TableCreated(BaseModel):
    success: bool = True
    table: TableOut


class TableOne(BaseModel):
    table: TableOut


class TableList(BaseModel):
    tables: list[TableOut]


class Success(BaseModel):
    success: bool = True


class RecordsIn(BaseModel):
    records: list[dict[str, Any]] = Field(min_length=1, max_length=1000)


class Records(BaseModel):
    records: list[dict[str, Any]]


class RecordOne(BaseModel):
    record: dict[str, Any]


class RecordPage(BaseModel):
    records: list[dict[str, Any]]
    total_count: int
    page: int
    per_page: int


class Deleted(BaseModel):
    success: bool = True
    message: str


class DeletedAll(BaseModel):
    success: bool = True
    message: str
    deleted_count: int


class QueryFilter(BaseModel):
    column: str
    op: Literal["eq", "ne", "lt", "lte", "gt", "gte", "in", "contains", "is_null"]
    value: Any = None


class QueryIn(BaseModel):
    """Documentation of the query body; it is read by ``custom_data.query`` with the list rules."""

    filters: list[QueryFilter] = Field(default_factory=list, max_length=50)
    sort_by: str | None = None
    sort_direction: str | None = None
    page: int | None = None
    per_page: int | None = None


def _query_parameter(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": schema,
        "description": description,
    }


#: The query parameters of ``GET /data/{table_name}`` (docs/api-contract.md#custom-data), for the
#: OpenAPI document: the route reads them itself, leniently, so they are not declared as FastAPI
#: parameters.
LIST_PARAMETERS: list[dict[str, Any]] = [
    _query_parameter(
        "page", {"type": "integer", "default": 1}, "Page number from 1; invalid or < 1 reads as 1"
    ),
    _query_parameter(
        "per_page",
        {"type": "integer", "default": 50},
        "Records per page; above 200 reads as 200, invalid or < 1 as 50",
    ),
    _query_parameter(
        "sort_by",
        {"type": "string", "default": "id"},
        "A declared column or id, organization_id, created_at, updated_at (422 for others); "
        "ties are broken by id",
    ),
    _query_parameter(
        "sort_direction",
        {"type": "string", "default": "DESC"},
        "ASC or asc sorts ascending; anything else, or nothing, descending",
    ),
    {
        "name": "filters",
        "in": "query",
        "required": False,
        "style": "form",
        "explode": True,
        "schema": {"type": "object", "additionalProperties": {"type": "string"}},
        "description": "Column filters: every other parameter that names a column is an "
        "exact-match filter (`?status=active&tier=gold`), its text converted to the column's "
        "type (`true`/`false`/`1`/`0` for BOOLEAN; JSON columns cannot be filtered); repeat a "
        "parameter to match any of its values. Parameters that name no column are ignored.",
    },
]
