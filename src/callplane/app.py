"""``create_app(settings)`` → the ASGI application."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from sqlalchemy import text
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response

from callplane import __version__
from callplane.contacts.purge import purge_task
from callplane.dashboard import create_dashboard
from callplane.engine.embedded import embedded_engine
from callplane.http import openapi
from callplane.http.families import STATUS, ErrorFamily, render_validation
from callplane.http.middleware import RequestContextMiddleware
from callplane.http.responses import JSONResponse, json_response
from callplane.http.v1 import include_v1
from callplane.logs import configure_logging
from callplane.runtime import Runtime
from callplane.settings import Settings

log = logging.getLogger("callplane")

DESCRIPTION = """Public API v1 of the voice-agent platform: calls, contact data, custom data tables,
feedback notes, phone numbers, voices, call tags and external calls. Every route needs
`Authorization: Bearer <API key>`; each route family has its own error shape (see responses)."""


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    configure_logging(settings.log_level)
    runtime = Runtime.build(settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(purge_task(runtime))
            app.state.engine = await stack.enter_async_context(embedded_engine(runtime))
            yield
        await runtime.close()

    app = FastAPI(
        title="callplane — public API v1",
        description=DESCRIPTION,
        version=__version__,
        openapi_url="/v1/openapi.json",
        docs_url=None,  # served by http/openapi.py from packaged assets (works offline)
        redoc_url=None,
        default_response_class=JSONResponse,
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    include_v1(app)
    app.mount("/dashboard", create_dashboard(runtime))
    _add_operational_routes(app, runtime)
    _add_fallback_handlers(app)
    openapi.install(app)
    app.add_middleware(RequestContextMiddleware)
    return app


def create_app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory`` (each worker process builds its own app)."""
    return create_app(Settings())


def _add_operational_routes(app: FastAPI, runtime: Runtime) -> None:
    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> Response:
        return json_response({"status": "ok"})

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> Response:
        try:
            async with runtime.db.engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
        except Exception:
            log.exception("readiness check failed")
            return json_response({"status": "unavailable"}, 503)
        return json_response({"status": "ok"})


def _family_of(request: Request) -> ErrorFamily | None:
    route = request.scope.get("route")
    family: ErrorFamily | None = getattr(route, "error_family", None)
    return family


def _add_fallback_handlers(app: FastAPI) -> None:
    """Errors outside any family route: unknown paths, wrong methods, and bugs."""

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        family = _family_of(request) or STATUS
        headers = dict(exc.headers or {})
        return json_response(
            family.body(str(exc.detail), [str(exc.detail)]), exc.status_code, headers
        )

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        rendered = render_validation(_family_of(request) or STATUS, list(exc.errors()))
        return json_response(rendered.body, rendered.status_code)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        log.error(
            "unhandled error",
            exc_info=exc,
            extra={"request_id": request.scope.get("state", {}).get("request_id")},
        )
        family = _family_of(request) or STATUS
        return json_response(family.body("Internal server error", ["Internal server error"]), 500)
