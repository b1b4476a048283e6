"""``create_dashboard(runtime)``: the ASGI application mounted at /dashboard."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from fastapi import FastAPI
from jinja2 import Environment
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from callplane.dashboard import (
    agent_chat,
    agent_tests,
    agents,
    calls,
    campaigns,
    contacts,
    external_calls,
    keys,
    knowledge,
    numbers,
    overview,
    people,
    replays,
    tables,
    talk,
    voice_previews,
    webhooks,
)
from callplane.dashboard.rendering import build_environment, render
from callplane.dashboard.sessions import SessionCodec
from callplane.http.shared_routes import include_shared
from callplane.runtime import Runtime

log = logging.getLogger("callplane.dashboard")

PAGES = (
    overview.router,
    people.router,
    calls.router,
    contacts.router,
    tables.router,
    external_calls.router,
    numbers.router,
    agents.router,
    agent_chat.router,
    campaigns.router,
    agent_tests.router,
    replays.router,
    knowledge.router,
    webhooks.router,
    keys.router,
    talk.router,
    voice_previews.router,
)

# No inline script or style anywhere, so the policy can forbid both: injected markup cannot run.
# Media may come from the storage's own presigned URLs (S3), hence any source for audio.
_SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"media-src 'self' https: http:; form-action 'self'; frame-ancestors 'none'; "
        b"base-uri 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]


@dataclass(frozen=True)
class DashboardState:
    codec: SessionCodec
    templates: Environment


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def create_dashboard(runtime: Runtime) -> FastAPI:
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.state.runtime = runtime
    app.state.dashboard = DashboardState(SessionCodec(runtime.settings), build_environment())
    include_shared(app, PAGES, prefix="")

    @app.get("/", include_in_schema=False)
    async def home(request: Request) -> Response:
        return RedirectResponse(f"{request.scope.get('root_path', '')}/overview", 303)

    app.mount("/static", StaticFiles(packages=[("callplane.dashboard", "static")]), name="static")

    @app.exception_handler(StarletteHTTPException)
    async def not_found(request: Request, exc: StarletteHTTPException) -> Response:
        title = "Not found" if exc.status_code == 404 else "Error"
        return render(request, "error.html", exc.status_code, title=title, message=str(exc.detail))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        log.error("dashboard error", exc_info=exc)
        return render(
            request, "error.html", 500, title="Something went wrong", message="Please try again."
        )

    app.add_middleware(SecurityHeaders)
    return app
