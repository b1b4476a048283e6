"""The hottest custom-data requests, served without FastAPI's routing and dependency solving.

``GET /v1/data/{table}`` (a list page), ``GET /v1/data/{table}/{id}`` and
``PATCH /v1/data/{table}/{id}`` (without ``sourceUpdatedAtColumn``) are what clients send
thousands of times a second. Profiled, a third of such a request went to matching the path
against every route of the API and solving four dependencies; this ASGI layer recognises exactly
these shapes and runs the same pieces the family route runs — body policy (``http.body``),
authentication and rate limit (``http.auth``), the catalog and the statements (``custom_data``),
inside the unit of work with errors rendered in the STATUS family (``http.answer``) — in the same
order.

Why two ways into the same handlers: the FastAPI routes in ``router`` remain the contract (they
are what OpenAPI documents) and serve every request this layer does not take: any other path or
method, an id FastAPI would have to parse (leading zeros, signs), an escaped path, a query string
on PATCH, a body that is not a JSON object. Those go on to the app untouched (a body already read
is handed on as it was received), so their answers, errors included, are the routes' own.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from sqlalchemy.exc import DBAPIError
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from callplane.custom_data import query, records
from callplane.custom_data.schema import RESERVED_TABLE_NAMES, TableSchema
from callplane.errors import CallplaneError, InvalidInput, NotFound
from callplane.http.answer import answer, error_response
from callplane.http.auth import authenticate
from callplane.http.body import PolicedRequest, police_body
from callplane.http.families import STATUS
from callplane.http.unit_of_work import get_session, has_session
from callplane.kit.driver import Db
from callplane.runtime import Runtime

#: /v1/data/{table} (group 1) or /v1/data/{table}/{id} (groups 1, 2)
_DATA_PATH = re.compile(r"/v1/data/([A-Za-z0-9_-]{1,63})(?:/([1-9][0-9]{0,17}))?")


class HotRecords:
    """ASGI middleware in front of the app (inside the request-id, HEAD and error layers)."""

    def __init__(self, app: ASGIApp, runtime: Runtime) -> None:
        self.app = app
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            method = scope["method"]
            if method == "GET" or (method == "PATCH" and not scope["query_string"]):
                match = _DATA_PATH.fullmatch(scope["path"])
                raw = scope.get("raw_path")
                if (
                    match is not None
                    and match.group(1) not in RESERVED_TABLE_NAMES
                    and (not isinstance(raw, bytes) or b"%" not in raw)
                ):
                    name, record_id = match.group(1), match.group(2)
                    if record_id is not None:
                        await self._serve(scope, receive, send, name, int(record_id))
                        return
                    if method == "GET":
                        await self._list(scope, receive, send, name)
                        return
        await self.app(scope, receive, send)

    async def _serve(
        self, scope: Scope, receive: Receive, send: Send, name: str, record_id: int
    ) -> None:
        request = Request(scope, receive)
        body: Any = None
        if scope["method"] == "PATCH":
            try:
                policed = await police_body(request)
            except CallplaneError as exc:
                await error_response(STATUS, exc)(scope, receive, send)
                return
            assert isinstance(policed, PolicedRequest)
            body = policed.document
            if not isinstance(body, dict):
                # Not a JSON object: FastAPI's validation of the route's body answers it.
                await self.app(scope, _replay(policed.raw_body), send)
                return
            request = policed
        write = body is not None

        async def operation(db: Db, table: TableSchema) -> dict[str, Any]:
            if body is None:
                return await records.get_record(db, table, record_id)
            return await records.patch_record(db, table, record_id, body)

        await self._answer(
            send, request, name, operation, lambda found: {"record": found}, write=write
        )

    async def _list(self, scope: Scope, receive: Receive, send: Send, name: str) -> None:
        request = Request(scope, receive)
        params = request.query_params.multi_items()

        async def operation(db: Db, table: TableSchema) -> dict[str, Any]:
            return await query.list_records(db, table, params)

        await self._answer(send, request, name, operation, lambda page: page, settled=_has_records)

    async def _answer(
        self,
        send: Send,
        request: Request,
        name: str,
        operation: Callable[[Db, TableSchema], Awaitable[dict[str, Any]]],
        body_of: Callable[[dict[str, Any]], dict[str, Any]],
        *,
        write: bool = False,
        settled: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        """Run ``operation`` and send its answer, or its error in the STATUS family, as the
        family route would (``http.answer``)."""

        async def handler() -> dict[str, Any]:
            result = await self._run(request, name, operation, write=write, settled=settled)
            return body_of(result)

        await answer(request, send, STATUS, handler)

    async def _run(
        self,
        request: Request,
        name: str,
        operation: Callable[[Db, TableSchema], Awaitable[dict[str, Any]]],
        *,
        write: bool = False,
        settled: Callable[[dict[str, Any]], bool] | None = None,
    ) -> dict[str, Any]:
        """Authenticate, then run ``operation``: in a transaction of its own when the key and the
        table were known already (no session, nothing read but the one statement), else on the
        session with the catalog (``Catalog.with_table``). Anything short of a plain answer in
        the first case (not found, refused, a changed table) is rolled back and asked again the
        second way, which sorts it out."""
        runtime = self.runtime
        tenant = await authenticate(
            request, partial(get_session, request), runtime.key_cache, runtime.limiter
        )
        organization_id = tenant.organization_id
        pool = runtime.own_transactions
        table = runtime.catalog.remembered(organization_id, name)
        if pool is not None and table is not None and not has_session(request):
            own = await pool.begin(write=write)
            try:
                result = await operation(own, table)
            except (NotFound, InvalidInput, DBAPIError):
                await pool.end(own, commit=False)
            except BaseException:
                await pool.end(own, commit=False)
                raise
            else:
                if settled is None or settled(result):
                    await pool.end(own, commit=True)
                    return result
                await pool.end(own, commit=False)
        session = await get_session(request)

        async def on_session(schema: TableSchema) -> dict[str, Any]:
            return await operation(session, schema)

        return await runtime.catalog.with_table(session, organization_id, name, on_session, settled)


def _has_records(page: dict[str, Any]) -> bool:
    return bool(page["total_count"])


def _replay(raw: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}
        return {"type": "http.disconnect"}

    return receive
