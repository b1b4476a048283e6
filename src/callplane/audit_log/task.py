"""AUDIT_SEAL: every worker seals what was written since (``audit.seal``), every
``INTERVAL_SECONDS``, a batch per organization per transaction, again at once while a batch
comes back full. Workers seal side by side: they queue on each chain's head."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.audit.seal import BATCH, INTERVAL_SECONDS, seal_batch, unsealed_organizations
from callplane.jobs import TaskContext, WorkerTask
from callplane.runtime import Runtime


async def _seal(session: AsyncSession, _runtime: Runtime, organization_id: int) -> int:
    return await seal_batch(session, organization_id, BATCH)


async def seal_step(ctx: TaskContext) -> bool:
    """One batch of each organization with unsealed events; True while one came back full."""
    async with ctx.runtime.db.session(write=False) as session:
        organizations = await unsealed_organizations(session)
    more = False
    for organization_id in organizations:
        more = await ctx.transact(_seal, organization_id) == BATCH or more
    return more


async def _run(ctx: TaskContext) -> None:
    await ctx.repeat(seal_step, interval=INTERVAL_SECONDS)


AUDIT_SEAL = WorkerTask("audit-seal", _run)
