"""Dashboard sessions: one signed cookie, and the CSRF token it carries.

The cookie holds ``{"c": csrf token}`` for a visitor, plus ``"o"``, ``"u"`` and ``"v"``
(organization, person, session version) once they have signed in. It is signed with a key
derived from the deployment's signing key (itsdangerous, with a timestamp: a session lasts at most
SESSION_SECONDS), HttpOnly, SameSite=Lax, Secure when CALLPLANE_PUBLIC_URL is https, and scoped
to /dashboard so the API never sees it. Sign-out and password changes bump the person's session
version, which ends every cookie issued before (a stolen cookie dies with the sign-out).

Every form posts the token (``csrf_token`` field, or ``X-CSRF-Token`` for htmx requests), and the
route class compares it with the cookie's before any handler runs: a page on another site can
neither read the token nor set the cookie.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from itsdangerous import BadSignature, URLSafeTimedSerializer

from callplane.deployment import DeploymentKey, derive_secret
from callplane.kit.db import Database
from callplane.settings import Settings

COOKIE = "callplane_dashboard"
COOKIE_PATH = "/dashboard"
SESSION_SECONDS = 12 * 3600
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"


@dataclass(frozen=True, slots=True)
class SessionState:
    csrf: str
    organization_id: int | None = None
    user_id: int | None = None
    version: int | None = None

    def payload(self) -> dict[str, Any]:
        data: dict[str, Any] = {"c": self.csrf}
        if self.user_id is not None:
            data.update(o=self.organization_id, u=self.user_id, v=self.version)
        return data


def new_state() -> SessionState:
    return SessionState(csrf=secrets.token_urlsafe(32))


class SessionCodec:
    """Signs and reads session cookies; the key is read from the database once per process."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.secure = settings.public_url.startswith("https://")
        self._serializer: URLSafeTimedSerializer | None = None
        self.key = DeploymentKey(settings)
        self._lock = asyncio.Lock()

    async def serializer(self, db: Database) -> URLSafeTimedSerializer:
        if self._serializer is None:
            async with self._lock:
                if self._serializer is None:
                    key = await self.key.load(db)
                    self._serializer = URLSafeTimedSerializer(
                        derive_secret(key, "dashboard-sessions"), salt="callplane-dashboard"
                    )
        return self._serializer

    async def read(self, db: Database, cookie: str | None) -> SessionState | None:
        if not cookie or len(cookie) > 4096:
            return None
        try:
            data = (await self.serializer(db)).loads(cookie, max_age=SESSION_SECONDS)
        except BadSignature:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("c"), str):
            return None
        ids = (data.get("o"), data.get("u"), data.get("v"))
        if all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            return SessionState(data["c"], *ids)
        return SessionState(data["c"])

    async def dump(self, db: Database, state: SessionState) -> str:
        value = (await self.serializer(db)).dumps(state.payload())
        assert isinstance(value, str)
        return value


def csrf_matches(state: SessionState | None, sent: str | None) -> bool:
    if state is None or not sent:
        return False
    return hmac.compare_digest(state.csrf.encode(), sent.encode())
