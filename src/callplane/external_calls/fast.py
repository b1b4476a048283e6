"""The fast paths of external calls (``http.fast``): ``GET /v1/external_calls`` and
``GET /v1/external_calls/{uuid}``. Each runs the routes' own pieces (``router``) in their order:
authentication and rate limit, then the read (``reads``, the body the routes answer with too), in
a read transaction of its own when one can be had (``http.unit_of_work.one_transaction``).

Left to the routes: an id not written as 8-4-4-4-12 hex digits, and a query string on the list
other than ``page`` and ``page_size`` once each, in plain decimal and within the routes' bounds
(their answers, a validation error's 422 included, are the routes' own).
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from starlette.requests import Request
from starlette.types import Scope

from callplane.external_calls import reads
from callplane.external_calls.router import DEFAULT_PAGE_SIZE, MAX_PAGE, MAX_PAGE_SIZE
from callplane.http.deps import current_tenant
from callplane.http.fast import Answer, FastPath
from callplane.http.unit_of_work import one_transaction
from callplane.kit.driver import Db
from callplane.runtime import Runtime

_HEX = "[0-9A-Fa-f]"
_UUID = rf"(?P<uuid>{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}})"
_BOUNDS = {b"page": MAX_PAGE, b"page_size": MAX_PAGE_SIZE}
_NUMBER = re.compile(rb"[1-9][0-9]{0,6}")


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


def _take_list(scope: Scope, _match: re.Match[str]) -> Answer | None:
    paging = _paging(scope["query_string"])
    if paging is None:
        return None
    page, page_size = paging

    async def answer(request: Request) -> dict[str, Any]:
        runtime: Runtime = request.app.state.runtime
        organization_id = (await current_tenant(request)).organization_id

        async def read(db: Db) -> dict[str, Any]:
            return await reads.external_calls_page(db, runtime, organization_id, page, page_size)

        return await one_transaction(request, read, write=False)

    return answer


def _take_one(_scope: Scope, match: re.Match[str]) -> Answer | None:
    # The route takes no query parameters: FastAPI ignores any, and so does this.
    external_call_id = uuid.UUID(match["uuid"])

    async def answer(request: Request) -> dict[str, Any]:
        runtime: Runtime = request.app.state.runtime
        organization_id = (await current_tenant(request)).organization_id

        async def read(db: Db) -> dict[str, Any]:
            return await reads.external_call_body(db, runtime, organization_id, external_call_id)

        return await one_transaction(request, read, write=False)

    return answer


FAST_PATHS = (
    FastPath("GET", "/v1/external_calls", re.compile("/v1/external_calls"), _take_list),
    FastPath(
        "GET", "/v1/external_calls/{uuid}", re.compile("/v1/external_calls/" + _UUID), _take_one
    ),
)
