"""Rate limits with the ``limits`` library: per API key, and per client address for failed logins.

Counters live in process memory by default, or in Redis when CALLPLANE_REDIS_URL is set so that
every process of a deployment shares them. A limiter backend that fails (Redis down) lets the
request through and logs: an outage of the limiter must not become an outage of the API.
"""

from __future__ import annotations

import logging
import math
import time

from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, Storage
from limits.aio.strategies import FixedWindowRateLimiter
from limits.storage import storage_from_string
from redis.asyncio import ConnectionPool

from callplane.errors import RateLimited
from callplane.settings import Settings

log = logging.getLogger("callplane.ratelimit")


def parse_limit(value: str) -> RateLimitItem | None:
    """``"1200/minute"`` → a limit; ``"0"``, ``"off"`` or empty → no limit."""
    value = value.strip().lower()
    if value in ("", "0", "off", "none", "false"):
        return None
    return parse(value)


def _storage(settings: Settings) -> tuple[Storage, ConnectionPool | None]:
    """The counters' storage, and the Redis connection pool behind it (ours to close: the
    storage never closes its connections, which would be left to the garbage collector)."""
    if not settings.redis_url:
        return MemoryStorage(), None
    url = settings.redis_url.removeprefix("async+")
    pool = ConnectionPool.from_url(url.replace("redis+unix://", "unix://", 1))
    storage = storage_from_string(
        "async+" + url,
        key_prefix=settings.redis_prefix,
        implementation="redispy",
        # Documented by limits ("connection_pool: if provided..."), typed as a scalar option.
        connection_pool=pool,  # type: ignore[arg-type]
    )
    assert isinstance(storage, Storage), "an async+ URL yields an async storage"
    return storage, pool


class RateLimiter:
    def __init__(self, settings: Settings) -> None:
        self.per_key = parse_limit(settings.rate_limit)
        self.auth_failures = parse_limit(settings.auth_failure_limit)
        self.signin_failures = parse_limit(settings.signin_limit)
        limited = self.per_key or self.auth_failures or self.signin_failures
        self.storage: Storage | None = None
        self._pool: ConnectionPool | None = None
        if limited:
            self.storage, self._pool = _storage(settings)
        self._strategy = FixedWindowRateLimiter(self.storage) if self.storage else None

    async def _retry_after(self, item: RateLimitItem, identity: str) -> int:
        assert self._strategy is not None
        stats = await self._strategy.get_window_stats(item, identity)
        return max(1, math.ceil(stats.reset_time - time.time()))

    async def hit_key(self, api_key_id: int) -> None:
        """Count one request of an API key; RateLimited once its window is used up."""
        if self.per_key is None or self._strategy is None:
            return
        identity = f"key:{api_key_id}"
        try:
            allowed = await self._strategy.hit(self.per_key, identity)
            if not allowed:
                raise RateLimited(await self._retry_after(self.per_key, identity))
        except RateLimited:
            raise
        except Exception:  # the limiter's backend failed: fail open, loudly
            log.exception("rate limiter unavailable; request allowed")

    async def count_auth_failure(self, address: str) -> None:
        """Count one failed authentication of an address; RateLimited once it has used up its
        allowance (the failure is then answered 429 instead of 401). Only failures are counted
        and refused: see ``http.auth.authenticate`` for why."""
        if self.auth_failures is None or self._strategy is None:
            return
        identity = f"authfail:{address}"
        try:
            allowed = await self._strategy.hit(self.auth_failures, identity)
            if not allowed:
                raise RateLimited(await self._retry_after(self.auth_failures, identity))
        except RateLimited:
            raise
        except Exception:
            log.exception("rate limiter unavailable; failure not counted")

    async def guard_signin(self, identities: list[str]) -> None:
        """RateLimited while any of these (a client address, an account) has used up its
        allowance of failed dashboard sign-ins (CALLPLANE_SIGNIN_LIMIT)."""
        if self.signin_failures is None or self._strategy is None:
            return
        try:
            for identity in identities:
                key = f"signin:{identity}"
                if not await self._strategy.test(self.signin_failures, key):
                    raise RateLimited(await self._retry_after(self.signin_failures, key))
        except RateLimited:
            raise
        except Exception:
            log.exception("rate limiter unavailable; sign-in allowed")

    async def record_signin_failure(self, identities: list[str]) -> None:
        if self.signin_failures is None or self._strategy is None:
            return
        try:
            for identity in identities:
                await self._strategy.hit(self.signin_failures, f"signin:{identity}")
        except Exception:
            log.exception("rate limiter unavailable; failure not counted")

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()

    @property
    def in_memory(self) -> bool:
        """True when counters live in this process (each worker process counts on its own)."""
        return isinstance(self.storage, MemoryStorage)
