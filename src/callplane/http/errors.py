"""Every error response is rendered here, in the shape of the family of the route it concerns.

A family route (``http.routing``) only ends its unit of work and lets exceptions go; they come
here, through ``install(app)``:

- domain errors (``callplane.errors``) with their status, and request validation errors;
- Starlette's own 404/405 (an unknown path is the STATUS shape; a 405 lists in ``Allow`` every
  method the path has, from all its routes);
- database errors that are not bugs: SQLite's write lock timing out or the database being
  unreachable is 503 with ``Retry-After``;
- anything else (a bug) is caught by ``CrashBarrier``: logged once, as one JSON line with the
  traceback in a field, and answered 500 in the family's shape. It is not re-raised, so the
  server keeps the connection and the worker serving (Starlette's outermost error middleware
  would re-raise it to uvicorn, which then drops the keep-alive connection and prints a
  plain-text traceback).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from callplane.errors import CallplaneError, InvalidInput, Unavailable
from callplane.http.families import STATUS, ErrorFamily, Rendered, render_error, render_validation
from callplane.http.paths import path_table, route_path
from callplane.http.responses import json_response

log = logging.getLogger("callplane")


def family_of(scope: Scope) -> ErrorFamily:
    """The family of the route that matched (STATUS when none did, e.g. an unknown path)."""
    family: ErrorFamily | None = getattr(scope.get("route"), "error_family", None)
    return family or STATUS


def _respond(rendered: Rendered) -> Response:
    return json_response(rendered.body, rendered.status_code, rendered.headers)


def render(scope: Scope, exc: CallplaneError) -> Response:
    return _respond(render_error(family_of(scope), exc))


def allowed_methods(app: Any, scope: Scope) -> list[str]:
    """Every method the path that owns this URL serves (``http.paths``); HEAD wherever GET is
    (OPTIONS is CORS's)."""
    allowed = path_table(app).allowed_methods(route_path(scope))
    if "GET" in allowed:
        allowed.add("HEAD")
    return sorted(allowed)


def install(app: FastAPI) -> None:
    @app.exception_handler(CallplaneError)
    async def domain_error(request: Request, exc: CallplaneError) -> Response:
        return render(request.scope, exc)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        return _respond(render_validation(family_of(request.scope), list(exc.errors())))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 400:  # FastAPI could not read a body that passed the policy
            invalid = InvalidInput("Request body could not be parsed", type_="json_invalid")
            return render(request.scope, invalid)
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request.app, request.scope))
        family = family_of(request.scope)
        detail = str(exc.detail)
        if exc.status_code == 404 and detail == "Not Found":  # no route: say which path
            detail = f"Not found: {request.url.path}"
        return json_response(family.body(detail, [detail]), exc.status_code, headers)

    @app.exception_handler(OperationalError)
    @app.exception_handler(InterfaceError)
    async def database_unavailable(request: Request, exc: DBAPIError) -> Response:
        if "database is locked" in str(exc.orig):
            return render(request.scope, Unavailable("Database busy, retry shortly"))
        log.error("database unavailable", exc_info=exc, extra=_request_id(request.scope))
        return render(request.scope, Unavailable("Database unavailable, retry shortly"))


def _request_id(scope: Scope) -> dict[str, Any]:
    return {"request_id": scope.get("state", {}).get("request_id")}


class CrashBarrier:
    """ASGI middleware: a bug becomes a logged 500 in the family shape, and nothing else."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            log.error("unhandled error", exc_info=exc, extra=_request_id(scope))
            if started:
                raise  # half a response is out: only closing the connection tells the client
            family = family_of(scope)
            body = family.body("Internal server error", ["Internal server error"])
            await json_response(body, 500)(scope, receive, send)
