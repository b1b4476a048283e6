"""Bearer authentication, through the per-process key cache (``callplane.kit.keycache``), and
authorisation: the one check of a key's scopes against the scope its route declares
(``kit.scopes``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from callplane.errors import Forbidden, Unauthorized
from callplane.kit.keycache import KeyCache
from callplane.kit.scopes import grants
from callplane.kit.tenancy import Tenant
from callplane.orgs.service import find_tenant
from callplane.ratelimit import RateLimiter


def _bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > 512:
        return None
    return token


async def authenticate(
    request: Request,
    open_session: Callable[[], Awaitable[AsyncSession]],
    cache: KeyCache,
    limiter: RateLimiter,
) -> Tenant:
    """The caller's tenant; 401 for a missing or unknown key, 429 once its address has failed
    too often.

    Design: the presented key is checked first, and the failed-authentication limit counts and
    refuses failures only. A valid key is therefore never refused by it, so one client behind a
    shared proxy or NAT sending bad keys cannot lock out everyone else at that address. Checking
    first costs nothing a valid request does not already cost (one indexed lookup by hash), and
    gives nothing away: a key has 256 random bits, so the limit is there to slow down and flag a
    misbehaving client, not to protect a guessable key space. The address is the real client's
    behind a trusted reverse proxy (``CALLPLANE_TRUSTED_PROXIES``, see ``http.proxies``).
    """
    token = _bearer_token(request)
    tenant = None
    if token is not None:
        tenant = cache.get(token)
        if tenant is None:
            # The session is opened only here: a cached key costs no session at all.
            tenant = await find_tenant(await open_session(), token)
            if tenant is not None:
                cache.put(token, tenant)
    if tenant is None:
        await limiter.count_auth_failure(request.client.host if request.client else "unknown")
        if token is None:
            raise Unauthorized(
                "Missing or malformed Authorization header; expected 'Bearer <API key>'"
            )
        raise Unauthorized("Invalid API key")
    if tenant.expires_at is not None and tenant.expires_at <= datetime.now(UTC):
        raise Unauthorized("API key expired")
    await limiter.hit_key(tenant.api_key_id)
    return tenant


def authorize(tenant: Tenant, route: object) -> None:
    """403 unless the key holds the scope the matched route declares (``http.routing``)."""
    needed: str | None = getattr(route, "required_scope", None)
    if needed is not None and not grants(tenant.scopes, needed):
        raise Forbidden(f"This API key lacks the scope {needed}")
