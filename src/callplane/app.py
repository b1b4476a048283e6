"""``create_app(settings)`` → the ASGI application."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import FastAPI
from sqlalchemy import text
from starlette.responses import RedirectResponse, Response
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from callplane import __version__
from callplane.api import V1_FAST_PATHS, include_v1
from callplane.contacts.purge import purge_task
from callplane.dashboard import create_dashboard
from callplane.engine.embedded import embedded_engine
from callplane.engine.web import web_call_host
from callplane.http import errors, openapi
from callplane.http.conventions import HttpConventions, add_cors, cors_origins, trusted_proxies
from callplane.http.errors import CrashBarrier
from callplane.http.fast import FastPathLayer
from callplane.http.middleware import RequestContextMiddleware
from callplane.http.responses import JSONResponse, json_response
from callplane.kit.logs import configure_logging
from callplane.observability import exposition, tracing
from callplane.observability.middleware import HttpMetrics
from callplane.runtime import Runtime
from callplane.settings import Settings

log = logging.getLogger("callplane")

DESCRIPTION = """Public API v1 of the voice-agent platform: calls, contact data, custom data tables,
feedback notes, phone numbers, voices, call tags and external calls. Every route needs
`Authorization: Bearer <API key>`; each route family has its own error shape (see responses)."""


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    configure_logging(settings.log_level)
    tracing.configure()
    runtime = Runtime.build(settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            # Before the engine runs: no call ever waits for the key (callplane.deployment).
            try:
                await runtime.signer.secret(runtime.db)
            except Exception:  # the database may come later; the key is then read on first use
                log.exception("deployment key not loaded at start-up")
            await stack.enter_async_context(purge_task(runtime))
            await stack.enter_async_context(exposition.metrics_listener(runtime))
            app.state.engine = await stack.enter_async_context(embedded_engine(runtime))
            app.state.web_calls = await stack.enter_async_context(web_call_host(runtime))
            yield
        await runtime.close()

    app = FastAPI(
        # A trailing slash is served as the path without it (http.conventions), never redirected.
        redirect_slashes=False,
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
    exposition.install(app, runtime)
    errors.install(app)
    openapi.install(app)
    # Middleware, innermost first: the domains' fast paths, served without FastAPI's routing
    # through their routes' own pipeline (http.fast); a bug is a 500 in the family shape
    # (http.errors); HEAD, trailing slashes and CORS (http.conventions); the request id and
    # access log; and, outermost, the real client address behind a trusted reverse proxy.
    app.add_middleware(FastPathLayer, routes=app.routes, paths=V1_FAST_PATHS)
    app.add_middleware(CrashBarrier)
    app.add_middleware(HttpConventions)
    add_cors(app, cors_origins(settings.cors_origins))
    app.add_middleware(HttpMetrics, routes=app.routes)  # issue 29: by route template
    app.add_middleware(RequestContextMiddleware)
    proxies = trusted_proxies(settings.trusted_proxies)
    if proxies:
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=proxies)
    return app


def create_app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory`` (each worker process builds its own app)."""
    return create_app(Settings())


def _add_operational_routes(app: FastAPI, runtime: Runtime) -> None:
    # Where a person types an address: the dashboard (its own app answers ``/dashboard/``).
    @app.get("/", include_in_schema=False)
    @app.get("/dashboard", include_in_schema=False)
    async def to_dashboard() -> Response:
        return RedirectResponse("/dashboard/", 307)

    # Where a person guesses the API's docs are (a trailing slash is the same path).
    @app.get("/v1", include_in_schema=False)
    @app.get("/docs", include_in_schema=False)
    async def to_docs() -> Response:
        return RedirectResponse("/v1/docs", 307)

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
