"""The answer step of an ASGI layer that serves some requests of a family itself
(``custom_data.hot``, ``external_calls.hot``): what a family route does around its handler.

The handler runs inside the request's unit of work (``http.unit_of_work``): committed before the
response is sent, rolled back when anything is raised. Its dict goes out as JSON; a domain error
is rendered in the family's shape, and a database that is locked or unreachable is the 503 that
``http.errors`` gives the routes. Anything else (a bug) propagates to ``CrashBarrier``, as from a
route.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.exc import InterfaceError, OperationalError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope, Send

from callplane.errors import CallplaneError, Unavailable
from callplane.http.families import ErrorFamily, render_error
from callplane.http.responses import json_response
from callplane.http.unit_of_work import unit_of_work

log = logging.getLogger("callplane")


async def answer(
    request: Request,
    send: Send,
    family: ErrorFamily,
    handler: Callable[[], Awaitable[dict[str, Any]]],
) -> None:
    """Run ``handler`` in the request's unit of work and send its body, or its error."""
    scope = request.scope
    try:
        async with unit_of_work(request):
            body = await handler()
    except CallplaneError as exc:
        response = error_response(family, exc)
    except (OperationalError, InterfaceError) as exc:
        response = _unavailable(family, scope, exc)
    else:
        response = json_response(body)
    await response(scope, request.receive, send)


def error_response(family: ErrorFamily, exc: CallplaneError) -> Response:
    rendered = render_error(family, exc)
    return json_response(rendered.body, rendered.status_code, rendered.headers)


def _unavailable(
    family: ErrorFamily, scope: Scope, exc: OperationalError | InterfaceError
) -> Response:
    """As ``http.errors.database_unavailable`` answers for the routes."""
    if "database is locked" in str(exc.orig):
        return error_response(family, Unavailable("Database busy, retry shortly"))
    request_id = scope.get("state", {}).get("request_id")
    log.error("database unavailable", exc_info=exc, extra={"request_id": request_id})
    return error_response(family, Unavailable("Database unavailable, retry shortly"))
