"""Listing records: GET /data/{table} (query-string filters) and POST /data/{table}/query
(operator filters), with the paging and sorting rules of docs/api-contract.md#custom-data shared by
both.

Rules: ``page`` invalid or < 1 → 1; ``per_page`` default 50, > 200 → 200, invalid or < 1 → 50;
``sort_by`` default ``id``, unknown → 422; ``sort_direction`` ASC/asc ascending, anything else
descending; ties broken by id in the same direction; ``total_count`` counts every match.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.custom_data.records import current_catalog
from callplane.custom_data.schema import TableSchema
from callplane.custom_data.types import ColumnType
from callplane.errors import InvalidInput
from callplane.kit.driver import Db, Prepared, dialect_of, driver_of
from callplane.kit.pagination import offset
from callplane.kit.tenancy import owned_by

DEFAULT_PER_PAGE = 50
MAX_PER_PAGE = 200
#: Pages past this behave as this page (empty); keeps OFFSET within 64 bits.
MAX_PAGE = 2**31 - 1
MAX_FILTER_VALUES = 1000
MAX_FILTERS = 50
LIST_PARAMETERS = frozenset({"page", "per_page", "sort_by", "sort_direction"})
_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq,
    "lt": operator.lt,
    "lte": operator.le,
    "gt": operator.gt,
    "gte": operator.ge,
}
_DIGITS = re.compile(r"\s*[+-]?[0-9]+\s*")


@dataclass(frozen=True, slots=True)
class Paging:
    page: int
    per_page: int
    sort_by: str
    ascending: bool


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        return int(value)
    return None


def paging(
    schema: TableSchema, page: Any, per_page: Any, sort_by: Any, sort_direction: Any
) -> Paging:
    page_number = _as_int(page)
    page_number = 1 if page_number is None or page_number < 1 else min(page_number, MAX_PAGE)
    size = _as_int(per_page)
    size = DEFAULT_PER_PAGE if size is None or size < 1 else min(size, MAX_PER_PAGE)
    if sort_by is None or sort_by == "":
        sort_by = "id"
    if not isinstance(sort_by, str) or sort_by not in schema.kinds:
        raise InvalidInput("sort_by: not a column of the table", loc=("query", "sort_by"))
    if not schema.kinds[sort_by].sortable:
        raise InvalidInput("sort_by: JSON columns cannot be sorted", loc=("query", "sort_by"))
    ascending = isinstance(sort_direction, str) and sort_direction in ("ASC", "asc")
    return Paging(page_number, size, sort_by, ascending)


def _nullable(schema: TableSchema, name: str) -> bool:
    spec = schema.declared.get(name)
    return spec is not None and not spec.required


def _order(schema: TableSchema, p: Paging, dialect: str) -> list[Any]:
    t = schema.table
    sort = t.c[p.sort_by]
    key = sort.asc() if p.ascending else sort.desc()
    # Same NULL position on both backends (SQLite's: first ascending, last descending); the
    # PostgreSQL indexes of nullable columns are built in this order.
    if dialect == "postgresql" and _nullable(schema, p.sort_by):
        key = key.nulls_first() if p.ascending else key.nulls_last()
    if p.sort_by == "id":
        return [key]
    return [key, t.c.id.asc() if p.ascending else t.c.id.desc()]


async def run_list(
    db: Db,
    schema: TableSchema,
    p: Paging,
    conditions: list[Any],
    params: dict[str, Any],
    shape: Any = None,
) -> dict[str, Any]:
    """Count and page, two statements on the driver connection (``callplane.kit.driver``), each
    checking the table's catalog row like the record statements. ``shape`` (hashable, or None
    when the conditions are one-off) names the statements' structure, so the same list request
    reuses statements compiled once."""
    t = schema.table
    dialect = dialect_of(db)
    where = [owned_by(t, bindparam("org")), current_catalog(schema), *conditions]
    params = {**params, "org": schema.organization_id}

    def counting() -> Prepared:
        return Prepared.compile(select(func.count()).select_from(t).where(*where), dialect)

    def paging_query() -> Prepared:
        query = select(*schema.selectable).where(*where).order_by(*_order(schema, p, dialect.name))
        return Prepared.compile(
            query.limit(bindparam("limit")).offset(bindparam("offset")), dialect
        )

    if shape is None:
        count_query, page_query = counting(), paging_query()
    else:
        count_query = schema.statement(("count", shape), counting)
        page_query = schema.statement(("page", shape, p.sort_by, p.ascending), paging_query)
    driver = await driver_of(db)
    total = await driver.count(count_query, params)
    rows: list[dict[str, Any]] = []
    start = offset(p.page, p.per_page)
    if total and start < total:
        page_params = {**params, "limit": p.per_page, "offset": start}
        rows = await driver.fetchall(page_query, page_params)
    return {"records": rows, "total_count": total, "page": p.page, "per_page": p.per_page}


async def list_records(
    db: Db, schema: TableSchema, params: list[tuple[str, str]]
) -> dict[str, Any]:
    """GET /data/{table}: every parameter naming a column is an exact-match filter (typed; a
    repeated one matches any of its values); parameters naming no column are ignored."""
    first: dict[str, str] = {}
    grouped: dict[str, list[str]] = {}
    for name, value in params:
        if name in LIST_PARAMETERS:
            first.setdefault(name, value)
        elif name in schema.kinds:
            grouped.setdefault(name, []).append(value)
    p = paging(
        schema,
        first.get("page"),
        first.get("per_page"),
        first.get("sort_by"),
        first.get("sort_direction"),
    )
    if sum(len(v) for v in grouped.values()) > MAX_FILTER_VALUES:
        raise InvalidInput(f"at most {MAX_FILTER_VALUES} filter values", loc=("query",))
    conditions: list[Any] = []
    values: dict[str, Any] = {}
    shape = []
    for position, (name, texts) in enumerate(sorted(grouped.items())):
        kind = schema.kinds[name]
        converted = list(dict.fromkeys(kind.parse_text(name, text) for text in texts))
        column = schema.table.c[name]
        # One parameter per value (a statement compiled once per count of values).
        names = [f"f{position}_{i}" for i in range(len(converted))]
        values.update(zip(names, converted, strict=True))
        if len(names) > 1:
            conditions.append(column.in_([bindparam(n, type_=column.type) for n in names]))
        else:
            conditions.append(column == bindparam(names[0]))
        shape.append((name, len(names)))
    return await run_list(db, schema, p, conditions, values, tuple(shape))


def _operator_condition(
    schema: TableSchema, position: int, item: Any, dialect: str
) -> ColumnElement[bool]:
    where = f"filters[{position}]"
    if not isinstance(item, dict):
        raise InvalidInput(f"{where} must be an object", loc=("body", "filters", position))
    name, op, value = item.get("column"), item.get("op"), item.get("value")
    if not isinstance(name, str) or name not in schema.kinds:
        raise InvalidInput(
            f"{where}.column: not a column of the table", loc=("body", "filters", position)
        )
    kind: ColumnType = schema.kinds[name]
    column = schema.table.c[name]
    if op == "is_null":
        if not isinstance(value, bool):
            raise InvalidInput(
                f"{where}.value: is_null takes true or false", loc=("body", "filters", position)
            )
        return column.is_(None) if value else column.is_not(None)
    if not isinstance(op, str) or op not in kind.operators:
        allowed = ", ".join(sorted(kind.operators | {"is_null"}))
        raise InvalidInput(
            f"{where}.op: {name} supports {allowed}", loc=("body", "filters", position)
        )

    def convert(raw: Any) -> Any:
        if raw is None:
            raise InvalidInput(
                f"{where}.value: null is not a value here (use is_null)",
                loc=("body", "filters", position),
            )
        try:
            return kind.validate(name, raw)
        except InvalidInput as exc:
            raise InvalidInput(
                f"{where}.value: {exc.message}", loc=("body", "filters", position)
            ) from None

    if op == "in":
        if not isinstance(value, list) or not 1 <= len(value) <= MAX_FILTER_VALUES:
            raise InvalidInput(
                f"{where}.value: in takes a list of 1 to {MAX_FILTER_VALUES} values",
                loc=("body", "filters", position),
            )
        distinct = dict.fromkeys(convert(v) for v in value)
        return column.in_([bindparam(None, v, type_=column.type) for v in distinct])
    converted = convert(value)
    if op == "contains":
        # A plain substring test, case-sensitive on both backends (LIKE is not: it folds case
        # on SQLite and treats % and _ as wildcards).
        found = (
            func.strpos(column, converted)
            if dialect == "postgresql"
            else func.instr(column, converted)
        )
        condition: ColumnElement[bool] = found > 0
        return condition
    if op == "ne":
        # Rows where the column is null differ from any value, so they match.
        return column.is_distinct_from(converted)
    compare: ColumnElement[bool] = _COMPARISONS[op](column, converted)
    return compare


async def query_records(
    session: AsyncSession, schema: TableSchema, body: dict[str, Any]
) -> dict[str, Any]:
    """POST /data/{table}/query: filters combine with AND; paging and sorting as in GET."""
    filters = body.get("filters") or []
    if not isinstance(filters, list) or len(filters) > MAX_FILTERS:
        raise InvalidInput(
            f"filters must be a list of at most {MAX_FILTERS} filters", loc=("body", "filters")
        )
    p = paging(
        schema,
        body.get("page"),
        body.get("per_page"),
        body.get("sort_by"),
        body.get("sort_direction"),
    )
    dialect = session.get_bind().dialect.name
    conditions = [_operator_condition(schema, i, f, dialect) for i, f in enumerate(filters)]
    return await run_list(session, schema, p, conditions, {})
