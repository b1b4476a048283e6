"""The fast paths of custom data (``http.fast``): a list page, ``GET /v1/data/{table}/{id}`` and
``PATCH /v1/data/{table}/{id}`` without ``sourceUpdatedAtColumn`` — what clients send thousands
of times a second. Each runs the routes' own pieces (``router``) in their order: authentication
and rate limit, then the catalog and the statements (``query``, ``records``).

What a fast path adds besides skipping FastAPI: when the key and the table were known already,
the one statement runs in a transaction of its own (no session, nothing read but the statement,
which checks the catalog row itself). Anything short of a plain answer there (not found,
refused, a changed table) is rolled back and asked again on the session with the catalog
(``Catalog.with_table``), which sorts it out as the route does.

Left to the routes: any other path or method, an id FastAPI would have to parse (leading zeros,
signs), the reserved table name, a query string on PATCH, a body that is not a JSON object.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.exc import DBAPIError
from starlette.requests import Request
from starlette.types import Scope

from callplane.custom_data import query, records
from callplane.custom_data.schema import RESERVED_TABLE_NAMES, TableSchema
from callplane.errors import InvalidInput, NotFound
from callplane.http.body import PolicedRequest
from callplane.http.deps import current_tenant
from callplane.http.fast import Answer, FastPath, LeaveToRoute
from callplane.http.unit_of_work import UNSETTLED, get_session, own_transaction
from callplane.kit.driver import Db
from callplane.runtime import Runtime

Operation = Callable[[Db, TableSchema], Awaitable[dict[str, Any]]]

_TABLE = r"/v1/data/(?P<table_name>[A-Za-z0-9_-]{1,63})"
_RECORD = _TABLE + r"/(?P<id>[1-9][0-9]{0,17})"


async def _run(
    request: Request,
    name: str,
    operation: Operation,
    *,
    write: bool = False,
    settled: Callable[[dict[str, Any]], bool] | None = None,
) -> dict[str, Any]:
    runtime: Runtime = request.app.state.runtime
    organization_id = (await current_tenant(request)).organization_id
    table = runtime.catalog.remembered(organization_id, name)
    if table is not None:
        known = table
        result = await own_transaction(
            request,
            lambda db: operation(db, known),
            write=write,
            settled=settled,
            unsettled_by=(NotFound, InvalidInput, DBAPIError),
        )
        if result is not UNSETTLED:
            return result
    session = await get_session(request)

    async def on_session(schema: TableSchema) -> dict[str, Any]:
        return await operation(session, schema)

    return await runtime.catalog.with_table(session, organization_id, name, on_session, settled)


def _has_records(page: dict[str, Any]) -> bool:
    return bool(page["total_count"])


def _take_list(_scope: Scope, match: re.Match[str]) -> Answer | None:
    name = match["table_name"]
    if name in RESERVED_TABLE_NAMES:
        return None

    async def answer(request: Request) -> dict[str, Any]:
        params = request.query_params.multi_items()

        async def page(db: Db, table: TableSchema) -> dict[str, Any]:
            return await query.list_records(db, table, params)

        return await _run(request, name, page, settled=_has_records)

    return answer


def _take_get(_scope: Scope, match: re.Match[str]) -> Answer | None:
    name, record_id = match["table_name"], int(match["id"])
    if name in RESERVED_TABLE_NAMES:
        return None

    async def answer(request: Request) -> dict[str, Any]:
        async def read(db: Db, table: TableSchema) -> dict[str, Any]:
            return {"record": await records.get_record(db, table, record_id)}

        return await _run(request, name, read)

    return answer


def _take_patch(scope: Scope, match: re.Match[str]) -> Answer | None:
    name, record_id = match["table_name"], int(match["id"])
    if name in RESERVED_TABLE_NAMES or scope["query_string"]:
        return None

    async def answer(request: Request) -> dict[str, Any]:
        body = request.document if isinstance(request, PolicedRequest) else None
        if not isinstance(body, dict):
            raise LeaveToRoute(request)  # FastAPI's validation of the route's body words it
        values: dict[str, Any] = body

        async def patch(db: Db, table: TableSchema) -> dict[str, Any]:
            return {"record": await records.patch_record(db, table, record_id, values)}

        return await _run(request, name, patch, write=True)

    return answer


FAST_PATHS = (
    FastPath("GET", "/v1/data/{table_name}", re.compile(_TABLE), _take_list),
    FastPath("GET", "/v1/data/{table_name}/{id}", re.compile(_RECORD), _take_get),
    FastPath("PATCH", "/v1/data/{table_name}/{id}", re.compile(_RECORD), _take_patch),
)
