"""A short-lived cache of authenticated API keys, one per process (held by ``Runtime``).

A key found in the database is remembered for at most ``CACHE_SECONDS`` by each process, so a
revoked key stops working everywhere within that time (docs/api-contract.md#identity-and-tenancy:
within one second) while a busy client costs no query per request. Unknown keys are never cached: a
key created a moment ago must work at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from callplane.kit.tenancy import Tenant

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
