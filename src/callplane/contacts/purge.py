"""Background purge of expired contact data.

Expired data already reads as absent everywhere (every query filters on ``expires_at``); the purge
only reclaims the storage. Each ``callplane serve`` process (each worker) runs its own loop every
``CALLPLANE_CONTACT_PURGE_INTERVAL_SECONDS`` (0 disables it), starting at a random point of the
first interval so several processes do not wake together. Running it in many processes at once
is safe and idempotent: each batch is one short transaction that clears only rows still expired,
and on PostgreSQL rows locked by another purger or by a PUT are skipped (``SKIP LOCKED``), so no
request waits on the purge for longer than one small batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from callplane.contacts.service import purge_expired
from callplane.kit.db import Database
from callplane.models.base import utcnow
from callplane.runtime import Runtime

log = logging.getLogger("callplane.contacts.purge")

BATCH_SIZE = 500
#: Upper bound of batches per round, so one round never monopolizes the database.
MAX_BATCHES_PER_ROUND = 200


async def purge_round(
    db: Database, *, batch_size: int = BATCH_SIZE, max_batches: int = MAX_BATCHES_PER_ROUND
) -> int:
    """Clear expired data in batches of ``batch_size`` (one transaction each); returns how many."""
    purged = 0
    for _ in range(max_batches):
        async with db.session(write=True) as session:
            cleared = await purge_expired(session, now=utcnow(), batch_size=batch_size)
            await session.commit()
        purged += cleared
        if cleared < batch_size:
            break
        await asyncio.sleep(0)  # let queued requests take the write lock between batches
    return purged


async def _purge_forever(db: Database, interval: float) -> None:
    await asyncio.sleep(random.uniform(0, interval))  # spread processes apart
    while True:
        try:
            purged = await purge_round(db)
            if purged:
                log.info("purged expired contact data", extra={"purged": purged})
        except Exception:
            # A failed round (database restarting, lock timeout) is retried next interval.
            log.exception("contact data purge failed")
        await asyncio.sleep(interval)


@asynccontextmanager
async def purge_task(runtime: Runtime) -> AsyncIterator[None]:
    """Run the purge loop for the lifetime of the app (entered by the app's lifespan)."""
    interval = runtime.settings.contact_purge_interval_seconds
    if interval <= 0:
        yield
        return
    task = asyncio.create_task(_purge_forever(runtime.db, interval), name="contact-data-purge")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
