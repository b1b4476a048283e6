"""Per-process state built once from the settings and shared by all requests of an app.

It sits below ``http/`` and the routers: it imports only the database and its driver, settings,
limits, the key cache, the audio store and the custom-data catalog, so any layer may hold a
``Runtime`` without a cycle (``tests/test_layers.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from callplane.custom_data.catalog import Catalog
from callplane.kit.db import SQLITE_BUSY_TIMEOUT_MS, Database
from callplane.kit.driver import OwnPool, pool_for
from callplane.kit.keycache import KeyCache
from callplane.media.signing import RecordingSigner
from callplane.media.storage import Storage, storage_from_settings
from callplane.ratelimit import RateLimiter
from callplane.settings import Settings


@dataclass
class Runtime:
    settings: Settings
    db: Database
    limiter: RateLimiter
    #: Recording audio (local directory or S3) and the URLs handed out for it.
    storage: Storage
    signer: RecordingSigner
    key_cache: KeyCache = field(default_factory=KeyCache)
    #: Custom data table schemas this process has seen (``custom_data.catalog``).
    catalog: Catalog = field(init=False)
    #: Transactions without a session for the hot custom-data requests (None: use the session).
    own_transactions: OwnPool | None = field(init=False)

    def __post_init__(self) -> None:
        self.catalog = Catalog(self.db.backend)
        self.own_transactions = pool_for(self.db.serving_engine, SQLITE_BUSY_TIMEOUT_MS)

    @classmethod
    def build(cls, settings: Settings) -> Runtime:
        storage = storage_from_settings(settings)
        return cls(
            settings=settings,
            db=Database(settings.database_url),
            limiter=RateLimiter(settings),
            storage=storage,
            signer=RecordingSigner(settings),
        )

    async def close(self) -> None:
        await self.limiter.aclose()
        if self.own_transactions is not None:
            await self.own_transactions.close()
        await self.db.dispose()
