"""HTTP conventions every route follows, as ASGI middleware around the app.

- ``HEAD`` is served for every GET route (``/healthz`` included): the request is routed as GET
  and the response goes out with its headers (Content-Length included) but without a body.
- A trailing slash is served as the same path without it (``/v1/calls/`` is ``/v1/calls``):
  never an empty redirect. Paths of mounted apps (the dashboard) keep their own rules.
- CORS (``CALLPLANE_CORS_ORIGINS``, default none): browsers from the listed origins may call
  the API, preflight included; the API key still decides what a caller may do.
- ``CALLPLANE_TRUSTED_PROXIES``: the reverse proxies whose ``X-Forwarded-For`` names the client
  (uvicorn's ``ProxyHeadersMiddleware`` applies it), so rate limits and logs see the real client.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from callplane.errors import InvalidInput

#: Request headers a browser client sends, and response headers it may read.
CORS_REQUEST_HEADERS = ["Authorization", "Content-Type", "Idempotency-Key", "X-Request-Id"]
CORS_EXPOSED_HEADERS = ["Retry-After", "X-Request-Id", "WWW-Authenticate"]
CORS_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]

#: Path prefixes whose trailing slash is significant (mounted apps with their own routing).
_OWN_SLASHES = ("/dashboard",)


class HttpConventions:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if len(path) > 1 and path.endswith("/") and not path.startswith(_OWN_SLASHES):
            stripped = path.rstrip("/") or "/"
            raw = scope.get("raw_path")
            scope = {
                **scope,
                "path": stripped,
                "raw_path": raw.rstrip(b"/") if isinstance(raw, bytes) else raw,
            }
        if scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)


def require_utf8_path(scope: Scope) -> None:
    """A path whose percent-escapes decode to invalid UTF-8 (``/contacts/%FF/data``) is a 422:
    Starlette would decode it to U+FFFD and the route would act on a value nobody sent."""
    raw = scope.get("raw_path")
    if not isinstance(raw, bytes) or b"%" not in raw:
        return
    try:
        unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(
            "Path must be valid UTF-8 once percent-decoded", loc=("path",), type_="path_encoding"
        ) from None


def _listed(setting: str) -> list[str]:
    return [item.strip() for item in setting.split(",") if item.strip()]


def cors_origins(setting: str) -> list[str]:
    """``CALLPLANE_CORS_ORIGINS``: comma-separated origins, or ``*``; empty means none."""
    return [origin.rstrip("/") for origin in _listed(setting)]


def trusted_proxies(setting: str) -> list[str]:
    """``CALLPLANE_TRUSTED_PROXIES``: comma-separated IP addresses or networks (CIDR)."""
    return _listed(setting)


#: Paths that answer CORS themselves: a web call token names its own origin (``web_calls``).
_OWN_CORS = ("/v1/web_calls",)


class _ListedCors(CORSMiddleware):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].rstrip("/") in _OWN_CORS:
            await self.app(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def add_cors(app: FastAPI, origins: list[str]) -> None:
    if not origins:
        return
    app.add_middleware(
        _ListedCors,
        allow_origins=origins,
        allow_methods=CORS_METHODS,
        allow_headers=CORS_REQUEST_HEADERS,
        expose_headers=CORS_EXPOSED_HEADERS,
        max_age=600,
    )
