"""Bearer authentication with a short-lived cache.

A key found in the database is remembered for at most ``CACHE_SECONDS`` by each process, so a
revoked key stops working everywhere within that time (DESIGN §2: within one second) while a busy
client costs no query per request. Unknown keys are never cached: a key created a moment ago must
work at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from callplane.errors import Unauthorized
from callplane.orgs.service import Tenant, find_tenant
from callplane.ratelimit import RateLimiter

CACHE_SECONDS = 0.9
_CACHE_MAX_ENTRIES = 50_000


class KeyCache:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._entries: dict[str, tuple[float, Tenant]] = {}

    def get(self, plain: str) -> Tenant | None:
        entry = self._entries.get(plain)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            self._entries.pop(plain, None)
            return None
        return entry[1]

    def put(self, plain: str, tenant: Tenant) -> None:
        if len(self._entries) >= _CACHE_MAX_ENTRIES:
            self._entries.clear()
        self._entries[plain] = (self._clock() + CACHE_SECONDS, tenant)


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
    request: Request, session: AsyncSession, cache: KeyCache, limiter: RateLimiter
) -> Tenant:
    address = request.client.host if request.client else "unknown"
    await limiter.guard_auth_failures(address)
    token = _bearer_token(request)
    if token is None:
        await limiter.record_auth_failure(address)
        raise Unauthorized("Missing or malformed Authorization header; expected 'Bearer <API key>'")
    tenant = cache.get(token)
    if tenant is None:
        tenant = await find_tenant(session, token)
        if tenant is None:
            await limiter.record_auth_failure(address)
            raise Unauthorized("Invalid API key")
        cache.put(token, tenant)
    await limiter.hit_key(tenant.api_key_id)
    return tenant
