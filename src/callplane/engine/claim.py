"""Taking enqueued calls (DESIGN §10: enqueued → dialing).

For each organization with calls waiting (the one waiting longest first), one transaction:

1. On PostgreSQL, take the organization's claim lock (``pg_try_advisory_xact_lock``); when
   another worker holds it, skip the organization — that worker is serving it. SQLite has a
   single writer, so its write transaction is the lock.
2. Count the organization's calls in ``dialing`` or ``in_progress``;
   ``CALLPLANE_MAX_CONCURRENT_CALLS`` minus that is what may be claimed. Under the lock nobody
   else claims for the organization, so the count cannot go stale before the claim commits:
   the limit is never exceeded.
3. Its oldest enqueued calls are locked (``FOR UPDATE SKIP LOCKED``) and one UPDATE moves them
   to ``dialing`` with this worker's id and lease; the UPDATE requires ``status = 'enqueued'``.
   A concurrent cancel (itself ``UPDATE ... WHERE status = 'enqueued'``) either locked the row
   first — the claim skips it — or waits for the claim and then matches nothing (409). A call is
   never both cancelled and dialled.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.calls.events import record_call_event
from callplane.engine.lifecycle import ACTIVE, CLAIMED
from callplane.models.base import utcnow
from callplane.models.calls import Call
from callplane.runtime import Runtime
from callplane.tenancy import across_organizations

#: First key of the advisory locks (the second is the organization id); any constant that no
#: other application on the database uses.
CLAIM_LOCK_SPACE = 0x43504C  # "CPL"
#: Organizations looked at per claim round.
ORGANIZATIONS_PER_ROUND = 100


async def waiting_organizations(session: AsyncSession) -> list[int]:
    oldest = func.min(Call.created_at)
    rows = await session.execute(
        across_organizations(
            select(Call.organization_id)
            .where(Call.status == "enqueued")
            .group_by(Call.organization_id)
            .order_by(oldest)
            .limit(ORGANIZATIONS_PER_ROUND),
            "a worker claims work of every organization: which ones have calls waiting",
        )
    )
    return [org for (org,) in rows]


async def claim_for_organization(
    session: AsyncSession,
    runtime: Runtime,
    organization_id: int,
    worker_id: str,
    want: int,
) -> list[Call]:
    """Claim up to ``want`` of one organization's calls, within its limit. Commit after."""
    settings = runtime.settings
    postgres = session.get_bind().dialect.name == "postgresql"
    if postgres:
        locked = await session.scalar(
            select(func.pg_try_advisory_xact_lock(CLAIM_LOCK_SPACE, organization_id))
        )
        if not locked:
            return []
    active = await session.scalar(
        select(func.count())
        .select_from(Call)
        .where(Call.organization_id == organization_id, Call.status.in_(ACTIVE))
    )
    free = min(want, settings.max_concurrent_calls - int(active or 0))
    if free <= 0:
        return []
    oldest = (
        select(Call.id)
        .where(Call.organization_id == organization_id, Call.status == "enqueued")
        .order_by(Call.created_at, Call.id)
        .limit(free)
    )
    if postgres:
        oldest = oldest.with_for_update(skip_locked=True)
    # Two statements, not UPDATE ... WHERE id IN (SELECT ... LIMIT n): PostgreSQL may evaluate
    # such a subquery more than once and so update more than n rows.
    ids = list(await session.scalars(oldest))
    if not ids:
        return []
    now = utcnow()
    claimed = list(
        await session.scalars(
            update(Call)
            .where(
                Call.organization_id == organization_id,
                Call.id.in_(ids),
                Call.status == "enqueued",
            )
            .values(
                status=CLAIMED.target,
                worker_id=worker_id,
                lease_expires_at=now + timedelta(seconds=settings.worker_lease_seconds),
                event_sequence=Call.event_sequence + 1,
                updated_at=now,
            )
            .returning(Call)
            .execution_options(synchronize_session=False)
        )
    )
    claimed.sort(key=lambda c: (c.created_at, c.id))
    for call in claimed:
        await record_call_event(session, runtime, call, CLAIMED.event_type, {"status": call.status})
    return claimed
