"""Custom data tables: list, browse records (filter, sort, page) and edit one record.

Browsing passes the query string to the same listing code as ``GET /v1/data/{table}``, and a
saved record goes through the same ``patch_record`` as ``PATCH /v1/data/{table}/{id}``: the form
only turns text fields into JSON values; every rule is the API's.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from callplane.custom_data import query, records, schema
from callplane.custom_data.catalog import Catalog
from callplane.custom_data.schema import ColumnSpec, TableSchema
from callplane.dashboard.forms import fields
from callplane.dashboard.rendering import render
from callplane.dashboard.routing import CurrentPerson, dashboard_router
from callplane.errors import Conflict, InvalidInput
from callplane.http.deps import SessionDep
from callplane.kit.pagination import total_pages

router = dashboard_router()


def _catalog(request: Request) -> Catalog:
    catalog: Catalog = request.app.state.runtime.catalog
    return catalog


PER_PAGE = 25
_INTEGER = re.compile(r"\s*[+-]?[0-9]+\s*")


@router.get("/data")
async def tables_page(request: Request, session: SessionDep, person: CurrentPerson) -> Response:
    tables = await _catalog(request).list_tables(session, person.organization_id)
    return render(request, "tables.html", section="data", tables=tables)


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S UTC")
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@router.get("/data/{table_name}")
async def table_page(
    request: Request, table_name: str, session: SessionDep, person: CurrentPerson
) -> Response:
    table = await _catalog(request).find_table(session, person.organization_id, table_name)
    # Empty filter fields of the form mean "no filter"; everything else is the API's query.
    params = [(k, v) for k, v in request.query_params.multi_items() if v != ""]
    params = [(k, v) for k, v in params if k != "per_page"] + [("per_page", str(PER_PAGE))]
    error = None
    status_code = 200
    try:
        with schema.dropped_table_is_not_found():
            result = await query.list_records(session, table, params)
    except InvalidInput as exc:
        error, status_code = exc.message, 422
        result = {"records": [], "total_count": 0, "page": 1, "per_page": PER_PAGE}
    chosen = dict(request.query_params)
    return render(
        request,
        "table.html",
        status_code,
        section="data",
        table=table,
        columns=[c.name for c in table.selectable],
        filterable=[c for c in table.columns if c.kind.filterable],
        sortable=[name for name, kind in table.kinds.items() if kind.sortable],
        rows=[{k: _cell(v) for k, v in r.items()} for r in result["records"]],
        total=result["total_count"],
        page=result["page"],
        pages=total_pages(result["total_count"], PER_PAGE),
        chosen=chosen,
        params={k: v for k, v in chosen.items() if k != "page"},
        error=error,
    )


def _field_text(spec: ColumnSpec, value: Any) -> str:
    if value is None:
        return ""
    if spec.type == "JSON":
        return json.dumps(value, indent=2, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _json_value(spec: ColumnSpec, text: str) -> Any:
    """A form field as the JSON value an API client would send; the API's rules then judge it.

    Empty means null. Text that is not a number in a numeric column stays text, so the error the
    person sees is the API's ("must be an integer").
    """
    if text == "":
        return None
    kind = "INTEGER" if spec.references_id is not None else spec.type
    if kind == "INTEGER" and _INTEGER.fullmatch(text):
        return int(text)
    if kind == "FLOAT":
        try:
            number = json.loads(text)
        except ValueError:
            return text
        return number if isinstance(number, int | float) else text
    if kind == "BOOLEAN" and text in ("true", "false"):
        return text == "true"
    if kind == "JSON":
        try:
            return json.loads(text)
        except ValueError:
            raise InvalidInput(f"{spec.name}: is not valid JSON", loc=("body", spec.name)) from None
    return text


def _record_page(
    request: Request,
    table: TableSchema,
    record: dict[str, Any],
    values: dict[str, str],
    status_code: int = 200,
    error: str | None = None,
    saved: bool = False,
) -> Response:
    return render(
        request,
        "record.html",
        status_code,
        section="data",
        table=table,
        record=record,
        values=values,
        error=error,
        saved=saved,
        managed={k: _cell(record.get(k)) for k in ("id", "created_at", "updated_at")},
    )


@router.get("/data/{table_name}/{record_id}")
async def record_page(
    request: Request, table_name: str, record_id: int, session: SessionDep, person: CurrentPerson
) -> Response:
    table = await _catalog(request).find_table(session, person.organization_id, table_name)
    with schema.dropped_table_is_not_found():
        record = await records.get_record(session, table, record_id)
    values = {c.name: _field_text(c, record.get(c.name)) for c in table.columns}
    saved = request.query_params.get("saved") == "1"
    return _record_page(request, table, record, values, saved=saved)


@router.post("/data/{table_name}/{record_id}")
async def save_record(
    request: Request, table_name: str, record_id: int, session: SessionDep, person: CurrentPerson
) -> Response:
    table = await _catalog(request).find_table(session, person.organization_id, table_name)
    form = await fields(request)
    values = {c.name: form.get(c.name, "") for c in table.columns}
    try:
        body = {c.name: _json_value(c, values[c.name]) for c in table.columns}
        # A savepoint: after a refused write (a broken reference on PostgreSQL) the transaction
        # must still be usable to read the record back for the form.
        with schema.dropped_table_is_not_found():
            async with session.begin_nested():
                await records.patch_record(session, table, record_id, body)
    except (InvalidInput, Conflict) as exc:
        with schema.dropped_table_is_not_found():
            current = await records.get_record(session, table, record_id)
        return _record_page(request, table, current, values, exc.status_code, exc.message)
    base = request.scope.get("root_path", "")
    return RedirectResponse(f"{base}/data/{quote(table.name, safe='')}/{record_id}?saved=1", 303)
