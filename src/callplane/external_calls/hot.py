"""``GET /v1/external_calls`` and ``GET /v1/external_calls/{uuid}``, served without FastAPI's
routing and dependency solving.

Profiled once the reads themselves were cheap, a list page spent about a third of its time
matching the path against every route of the API, solving its four dependencies and opening,
committing and closing an ORM session around statements that never use it. This ASGI layer
recognises exactly these two shapes and runs the routes' own pieces in their order:
authentication and rate limit (``http.deps.current_tenant``), then the read (``reads``, the body
the routes answer with too) in a read transaction, inside the unit of work with errors rendered
in the EXTERNAL_CALLS family (``http.answer``).

The routes in ``router`` remain the contract (OpenAPI documents them) and serve every request
this layer does not take: another method or path, an escaped path, an id not written as
8-4-4-4-12 hex digits, a query string on the list other than ``page`` and ``page_size`` once
each, in plain decimal and within the routes' bounds. Those go on to the app untouched, so their
answers (a validation error's 422 included) are the routes' own. A bug raised here reaches
``CrashBarrier`` with no route in the scope, which renders the 500 in the STATUS shape: the body
this family gives too.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from callplane.external_calls import reads
from callplane.external_calls.router import DEFAULT_PAGE_SIZE, MAX_PAGE, MAX_PAGE_SIZE
from callplane.http.answer import answer
from callplane.http.deps import current_tenant
from callplane.http.families import EXTERNAL_CALLS
from callplane.http.unit_of_work import get_session, has_session
from callplane.kit.driver import Db
from callplane.runtime import Runtime

_PREFIX = "/v1/external_calls"
_HEX = "[0-9A-Fa-f]"
#: the list (no group) or one call (group 1: its id)
_PATH = re.compile(
    rf"/v1/external_calls(?:/({_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}))?"
)
_BOUNDS = {b"page": MAX_PAGE, b"page_size": MAX_PAGE_SIZE}
_NUMBER = re.compile(rb"[1-9][0-9]{0,6}")

Read = Callable[[Db, int], Awaitable[dict[str, Any]]]


class HotExternalCalls:
    """ASGI middleware in front of the app (inside the request-id, HEAD and error layers)."""

    def __init__(self, app: ASGIApp, runtime: Runtime) -> None:
        self.app = app
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        read = self._read_of(scope) if scope["type"] == "http" else None
        if read is None:
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)

        async def handler() -> dict[str, Any]:
            tenant = await current_tenant(request)
            return await _in_read_transaction(request, self.runtime, tenant.organization_id, read)

        await answer(request, send, EXTERNAL_CALLS, handler)

    def _read_of(self, scope: Scope) -> Read | None:
        """The read this request asks for, or None when the routes should answer it."""
        path: str = scope["path"]
        if scope["method"] != "GET" or not path.startswith(_PREFIX):
            return None
        match = _PATH.fullmatch(path)
        raw = scope.get("raw_path")
        if match is None or (isinstance(raw, bytes) and b"%" in raw):
            return None
        runtime = self.runtime
        call_id = match.group(1)
        if call_id is not None:
            # The route takes no query parameters: FastAPI ignores any, and so does this.
            external_call_id = uuid.UUID(call_id)
            return lambda db, org: reads.external_call_body(db, runtime, org, external_call_id)
        paging = _paging(scope["query_string"])
        if paging is None:
            return None
        page, page_size = paging
        return lambda db, org: reads.external_calls_page(db, runtime, org, page, page_size)


def _paging(query: bytes) -> tuple[int, int] | None:
    """(page, page_size) of a query string the route would accept as it is, else None."""
    values = {b"page": 1, b"page_size": DEFAULT_PAGE_SIZE}
    seen: set[bytes] = set()
    for part in query.split(b"&") if query else ():
        name, _, text = part.partition(b"=")
        bound = _BOUNDS.get(name)
        if bound is None or name in seen or not _NUMBER.fullmatch(text) or int(text) > bound:
            return None
        seen.add(name)
        values[name] = int(text)
    return values[b"page"], values[b"page_size"]


async def _in_read_transaction(
    request: Request, runtime: Runtime, organization_id: int, read: Read
) -> dict[str, Any]:
    """``read`` in a read transaction of its own, or on the request's session when
    authentication opened one (a key not cached yet): a request uses one or the other, never
    both."""
    pool = runtime.own_transactions
    if pool is None or has_session(request):
        return await read(await get_session(request), organization_id)
    own = await pool.begin(write=False)
    try:
        body = await read(own, organization_id)
    except BaseException:
        await pool.end(own, commit=False)
        raise
    await pool.end(own, commit=True)
    return body
