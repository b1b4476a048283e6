"""Every error response is rendered here, in the shape of the family of the route it concerns.

``error_response`` is the one renderer: the request pipeline (``http.pipeline``) that serves
family routes and fast paths renders what its handler raises through it, and so do the app's
exception handlers (``install(app)``) for what is raised outside any pipeline:

- domain errors (``callplane.errors``) with their status, and request validation errors;
- Starlette's own 404/405 (an unknown path is the STATUS shape; a 405 lists in ``Allow`` every
  method the path has, from all its routes);
- database errors that are not bugs: SQLite's write lock timing out, the database being
  unreachable or out of connections (the pool's wait, the server's limit) is 503 with
  ``Retry-After``;
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
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from callplane.errors import CallplaneError, InvalidInput, Unavailable
from callplane.http.families import STATUS, ErrorFamily, Rendered, render_error, render_validation
from callplane.http.paths import path_table, route_path
from callplane.http.responses import json_response
from callplane.kit.db import DatabaseUnreachable

log = logging.getLogger("callplane")


def family_of(scope: Scope) -> ErrorFamily:
    """The family of the route that matched (STATUS when none did, e.g. an unknown path)."""
    family: ErrorFamily | None = getattr(scope.get("route"), "error_family", None)
    return family or STATUS


def _respond(rendered: Rendered) -> Response:
    return json_response(rendered.body, rendered.status_code, rendered.headers)


def allowed_methods(app: Any, scope: Scope) -> list[str]:
    """Every method the path that owns this URL serves (``http.paths``); HEAD wherever GET is
    (OPTIONS is CORS's)."""
    allowed = path_table(app).allowed_methods(route_path(scope))
    if "GET" in allowed:
        allowed.add("HEAD")
    return sorted(allowed)


def error_response(scope: Scope, family: ErrorFamily, exc: Exception) -> Response | None:
    """The one renderer: the response an exception raised while serving a request of ``family``
    is answered with, or None for a bug (``CrashBarrier`` answers those). The request pipeline
    (``http.pipeline``) renders through it, and so do the app's exception handlers for what is
    raised outside it (an unknown path, a route's own checks)."""
    if isinstance(exc, CallplaneError):
        return _respond(render_error(family, exc))
    if isinstance(exc, RequestValidationError):
        return _respond(render_validation(family, list(exc.errors())))
    if isinstance(exc, StarletteHTTPException):
        if exc.status_code == 400:  # FastAPI could not read a body that passed the policy
            invalid = InvalidInput("Request body could not be parsed", type_="json_invalid")
            return _respond(render_error(family, invalid))
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(scope["app"], scope))
        detail = str(exc.detail)
        if exc.status_code == 404 and detail == "Not Found":  # no route: say which path
            detail = f"Not found: {scope['path']}"
        return json_response(family.body(detail, [detail]), exc.status_code, headers)
    if isinstance(exc, PoolTimeout | DatabaseUnreachable):
        # Every connection busy past the pool's wait, or none to be had from the server.
        log.error("database connections exhausted", exc_info=exc, extra=_request_id(scope))
        return _respond(render_error(family, Unavailable("Database busy, retry shortly")))
    if isinstance(exc, OperationalError | InterfaceError):
        if "database is locked" in str(exc.orig):
            return _respond(render_error(family, Unavailable("Database busy, retry shortly")))
        log.error("database unavailable", exc_info=exc, extra=_request_id(scope))
        unavailable = Unavailable("Database unavailable, retry shortly")
        return _respond(render_error(family, unavailable))
    return None


def install(app: FastAPI) -> None:
    async def rendered(request: Request, exc: Exception) -> Response:
        response = error_response(request.scope, family_of(request.scope), exc)
        if response is None:  # not registered for anything it cannot render
            raise exc
        return response

    for handled in (
        CallplaneError,
        RequestValidationError,
        StarletteHTTPException,
        OperationalError,
        InterfaceError,
        PoolTimeout,
        DatabaseUnreachable,
    ):
        app.add_exception_handler(handled, rendered)


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
