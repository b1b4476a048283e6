"""Taking enqueued calls (docs/engine-core.md: enqueued → dialing): many calls of many organizations
in one transaction and a fixed number of statements, whatever the number of calls.

1. The organizations with calls waiting, the one waiting longest first, with how many wait.
2. On PostgreSQL, their claim locks in one statement (``pg_try_advisory_xact_lock`` per
   organization); an organization whose lock another worker holds is skipped — that worker is
   serving it. SQLite has a single writer, so its write transaction is the lock.
3. The locked organizations' calls in ``dialing`` or ``in_progress``, counted in one statement:
   ``CALLPLANE_MAX_CONCURRENT_CALLS`` minus that is what each may have claimed. Under the locks
   nobody else claims for them, so the counts cannot go stale before the claim commits: the
   limit is never exceeded.
4. Each organization's oldest enqueued calls, as many as it may have, locked with
   ``FOR UPDATE SKIP LOCKED`` (one statement on PostgreSQL: a LATERAL subquery per
   organization); one UPDATE moves them all to ``dialing`` with this worker's id and lease,
   requiring ``status = 'enqueued'``. A concurrent cancel (itself ``UPDATE ... WHERE status =
   'enqueued'``) either locked the row first — the claim skips it — or waits for the claim and
   then matches nothing (409). A call is never both cancelled and dialled.
5. Their ``call.dialing`` events, in one go (``calls.events.record_call_events``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from sqlalchemy import Integer, bindparam, func, select, text, tuple_, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.calls.events import NewCallEvent, record_call_events
from callplane.engine.lifecycle import ACTIVE, CLAIMED
from callplane.kit.tenancy import across_organizations
from callplane.models.base import utcnow
from callplane.models.calls import Call
from callplane.runtime import Runtime

#: First key of the advisory locks (the second is the organization id); any constant that no
#: other application on the database uses.
CLAIM_LOCK_SPACE = 0x43504C  # "CPL"
#: Organizations looked at per claim round.
ORGANIZATIONS_PER_ROUND = 100

_LOCK = text(
    "SELECT o FROM unnest(:organizations) AS o WHERE pg_try_advisory_xact_lock(:space, o)"
).bindparams(bindparam("organizations", type_=ARRAY(Integer)), bindparam("space", type_=Integer))
# One statement for every organization: each one's oldest enqueued calls, as many as it may
# have, locked. (Not UPDATE ... WHERE id IN (SELECT ... LIMIT n): PostgreSQL may evaluate such a
# subquery more than once and so update more than n rows.)
_OLDEST = text(
    """
    SELECT c.organization_id, c.id
    FROM unnest(:organizations, :takes) AS w(organization_id, take)
    CROSS JOIN LATERAL (
        SELECT calls.organization_id, calls.id FROM calls
        WHERE calls.organization_id = w.organization_id AND calls.status = 'enqueued'
        ORDER BY calls.created_at, calls.id
        LIMIT w.take
        FOR UPDATE SKIP LOCKED
    ) AS c
    """
).bindparams(
    bindparam("organizations", type_=ARRAY(Integer)), bindparam("takes", type_=ARRAY(Integer))
)


async def waiting_organizations(session: AsyncSession) -> list[tuple[int, int]]:
    """(organization, calls waiting), the organization waiting longest first."""
    oldest = func.min(Call.created_at)
    rows = await session.execute(
        across_organizations(
            select(Call.organization_id, func.count())
            .where(Call.status == "enqueued")
            .group_by(Call.organization_id)
            .order_by(oldest)
            .limit(ORGANIZATIONS_PER_ROUND),
            "a worker claims work of every organization: which ones have calls waiting",
        )
    )
    return [(org, int(count)) for org, count in rows]


async def claim_calls(
    session: AsyncSession,
    runtime: Runtime,
    worker_id: str,
    want: int,
    organizations: Sequence[int] | None = None,
) -> list[Call]:
    """Claim up to ``want`` calls (of ``organizations`` only, if given), each organization within
    its limit, oldest first. Commit after."""
    settings = runtime.settings
    postgres = session.get_bind().dialect.name == "postgresql"
    if organizations is None:
        waiting = await waiting_organizations(session)
    else:
        waiting = [(org, want) for org in organizations]
    if not waiting:
        return []
    if postgres:
        locked = set(
            await session.scalars(
                across_organizations(
                    _LOCK.bindparams(
                        organizations=[org for org, _ in waiting], space=CLAIM_LOCK_SPACE
                    ),
                    "the claim locks of the organizations with calls waiting",
                )
            )
        )
        waiting = [(org, n) for org, n in waiting if org in locked]
        if not waiting:
            return []
    active: dict[int, int] = {
        org: int(count)
        for org, count in (
            await session.execute(
                across_organizations(
                    select(Call.organization_id, func.count())
                    .where(
                        Call.organization_id.in_([org for org, _ in waiting]),
                        Call.status.in_(ACTIVE),
                    )
                    .group_by(Call.organization_id),
                    "the calls in progress of the organizations whose claim locks are held",
                )
            )
        ).all()
    }
    takes: list[tuple[int, int]] = []
    left = want
    for org, count in waiting:
        take = min(count, left, settings.max_concurrent_calls - int(active.get(org, 0)))
        if take > 0:
            takes.append((org, take))
            left -= take
        if left <= 0:
            break
    if not takes:
        return []
    keys = await _oldest(session, takes, postgres)
    if not keys:
        return []
    now = utcnow()
    claimed = list(
        await session.scalars(
            across_organizations(
                update(Call)
                .where(tuple_(Call.organization_id, Call.id).in_(keys), Call.status == "enqueued")
                .values(
                    status=CLAIMED.target,
                    worker_id=worker_id,
                    lease_expires_at=now + timedelta(seconds=settings.worker_lease_seconds),
                    event_sequence=Call.event_sequence + 1,
                    updated_at=now,
                )
                .returning(Call)
                .execution_options(synchronize_session=False),
                "the claim moves the calls it locked, named by (organization, id)",
            )
        )
    )
    order = {org: n for n, (org, _) in enumerate(takes)}
    claimed.sort(key=lambda c: (order[c.organization_id], c.created_at, c.id))
    await record_call_events(
        session,
        runtime,
        [NewCallEvent(c, CLAIMED.event_type, {"status": c.status}) for c in claimed],
    )
    return claimed


async def _oldest(
    session: AsyncSession, takes: list[tuple[int, int]], postgres: bool
) -> list[tuple[int, object]]:
    if postgres:
        rows = await session.execute(
            across_organizations(
                _OLDEST.bindparams(
                    organizations=[org for org, _ in takes], takes=[n for _, n in takes]
                ),
                "the oldest enqueued calls of the organizations whose claim locks are held",
            )
        )
        return [(org, call_id) for org, call_id in rows]
    keys: list[tuple[int, object]] = []
    for org, take in takes:  # SQLite: the write transaction already excludes everyone
        ids = await session.scalars(
            select(Call.id)
            .where(Call.organization_id == org, Call.status == "enqueued")
            .order_by(Call.created_at, Call.id)
            .limit(take)
        )
        keys.extend((org, call_id) for call_id in ids)
    return keys


async def claim_for_organization(
    session: AsyncSession,
    runtime: Runtime,
    organization_id: int,
    worker_id: str,
    want: int,
) -> list[Call]:
    """Claim up to ``want`` of one organization's calls, within its limit. Commit after."""
    return await claim_calls(session, runtime, worker_id, want, [organization_id])
