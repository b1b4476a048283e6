"""Leases: a worker proves it is alive by renewing its calls; a call whose lease ran out is
failed by whichever worker notices first (docs/engine-core.md: never dialled twice).

Every third of ``CALLPLANE_WORKER_LEASE_SECONDS`` each worker extends the lease of the calls it
holds and looks for calls of any worker whose lease has expired. Such a call is failed with a
conditional UPDATE that re-checks the expiry, so a renewal racing the reaper wins or loses
cleanly. A worker whose call was failed under it finds out at its next move (the move matches
nothing) and hangs up.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from sqlalchemy import select, tuple_, update

from callplane.engine.lifecycle import ACTIVE, CallRef, lease_expired
from callplane.engine.switchboard import Switchboard
from callplane.jobs import TaskContext, WorkerTask
from callplane.kit.tenancy import across_organizations
from callplane.models.base import utcnow
from callplane.models.calls import Call

log = logging.getLogger("callplane.engine.leases")

REAP_BATCH = 100


async def renew(board: Switchboard) -> int:
    held = list(board.held)
    if not held:
        return 0
    expires = utcnow() + timedelta(seconds=board.settings.worker_lease_seconds)
    async with board.jobs.runtime.db.session(write=True) as session:
        renewal = (
            update(Call)
            .where(
                tuple_(Call.organization_id, Call.id).in_(
                    [(r.organization_id, r.call_id) for r in held]
                ),
                Call.worker_id == board.worker_id,
                Call.status.in_(ACTIVE),
            )
            .values(lease_expires_at=expires)
            .execution_options(synchronize_session=False)
        )
        reason = "a worker renews the leases of the calls it holds, named by (organization, id)"
        result = await session.execute(across_organizations(renewal, reason))
        await session.commit()
    return int(getattr(result, "rowcount", 0) or 0)


async def reap(board: Switchboard) -> int:
    """Fail the calls whose lease has expired; returns how many."""
    now = utcnow()
    async with board.jobs.runtime.db.session(write=False) as session:
        rows = (
            await session.execute(
                across_organizations(
                    select(Call.organization_id, Call.id, Call.worker_id, Call.started_at)
                    .where(Call.status.in_(ACTIVE), Call.lease_expires_at < now)
                    .limit(REAP_BATCH),
                    "calls of any organization whose worker is gone are failed",
                )
            )
        ).all()
    refs = [CallRef(org, call_id, worker_id or "") for org, call_id, worker_id, _ in rows]
    # Applied together, so the group commit makes them in one transaction.
    calls = await asyncio.gather(
        *(
            board.moves.apply(lease_expired(ref, started_at))
            for ref, (*_, started_at) in zip(refs, rows, strict=True)
        )
    )
    failed = 0
    for ref, call in zip(refs, calls, strict=True):
        if call is not None:
            failed += 1
            log.warning(
                "call failed: its worker's lease expired",
                extra={"call_id": str(ref.call_id), "worker_id": ref.worker_id},
            )
    return failed


def leases_task(board: Switchboard) -> WorkerTask:
    """Renewing this worker's leases and reaping the expired ones of every worker."""

    async def step(_ctx: TaskContext) -> bool:
        await renew(board)
        return await reap(board) == REAP_BATCH

    async def run(ctx: TaskContext) -> None:
        await ctx.repeat(step, interval=ctx.settings.worker_lease_seconds / 3)

    return WorkerTask("leases", run)
