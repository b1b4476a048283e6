"""What a form's answer shows once, carried across its redirect (POST-redirect-GET).

Every successful form answers 303 to a page, so refreshing that page never submits the form
again. A few answers must show a secret exactly once (a new API key, a new webhook secret), which
may never sit in a URL or the history: it rides in a short-lived cookie instead, encrypted with
a key derived from the deployment's (Fernet, from ``cryptography``), HttpOnly, scoped to the
dashboard, read and deleted by the page the redirect leads to.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Any

import orjson
from cryptography.fernet import Fernet, InvalidToken
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from callplane.dashboard.routing import runtime_of

COOKIE = "callplane_flash"
#: Long enough for the redirect, short enough that a stale one is gone.
LIFETIME_SECONDS = 60


async def _fernet(request: Request) -> Fernet:
    runtime = runtime_of(request)
    key = await runtime.signer.key.load(runtime.db)
    digest = hmac.new(key, b"dashboard-flash", hashlib.sha256).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


async def redirect_with(request: Request, path: str, shown_once: dict[str, Any]) -> Response:
    """A 303 to ``path`` (under the dashboard) carrying ``shown_once`` to the page there."""
    base = request.scope.get("root_path", "")
    response = RedirectResponse(f"{base}{path}", 303)
    token = (await _fernet(request)).encrypt(orjson.dumps(shown_once)).decode()
    response.set_cookie(
        COOKIE,
        token,
        max_age=LIFETIME_SECONDS,
        path=base or "/",
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )
    return response


async def take(request: Request) -> dict[str, Any] | None:
    """What the redirect carried, if anything (pair with ``forget`` on the response)."""
    token = request.cookies.get(COOKIE)
    if not token or len(token) > 8192:
        return None
    try:
        data = (await _fernet(request)).decrypt(token.encode(), ttl=LIFETIME_SECONDS)
    except InvalidToken:
        return None
    value = orjson.loads(data)
    return value if isinstance(value, dict) else None


def forget(request: Request, response: Response) -> Response:
    if COOKIE in request.cookies:
        response.delete_cookie(COOKIE, path=request.scope.get("root_path", "") or "/")
    return response
