"""Retention: call events and webhook deliveries are kept ``CALLPLANE_RETENTION_DAYS`` (90 by
default), then purged by the RETENTION worker task.

Rows go in small batches, each its own short transaction (the oldest first, found through an
index on their time), so a purge of years of history never holds locks long or blocks the
calls' own writes; the task runs again at once while full batches come back, else hourly.
Workers may purge side by side: a row deleted twice is simply not there the second time.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.engine.call_retention import BATCH as CALL_BATCH
from callplane.engine.call_retention import expire_calls
from callplane.jobs import TaskContext, WorkerTask
from callplane.kit.tenancy import across_organizations
from callplane.models.base import utcnow
from callplane.models.calls import CallEvent
from callplane.models.webhooks import WebhookDelivery
from callplane.runtime import Runtime

#: Rows per transaction.
BATCH = 500
INTERVAL_SECONDS = 3600.0
_REASON = "retention applies to every organization alike: rows older than the cutoff go"


async def purge_call_events(
    session: AsyncSession, _runtime: Runtime, cutoff: datetime, limit: int = BATCH
) -> int:
    oldest = (
        select(CallEvent.organization_id, CallEvent.call_uuid, CallEvent.sequence)
        .where(CallEvent.at < cutoff)
        .order_by(CallEvent.at)
        .limit(limit)
    )
    return await _delete(
        session,
        delete(CallEvent).where(
            tuple_(CallEvent.organization_id, CallEvent.call_uuid, CallEvent.sequence).in_(oldest)
        ),
    )


async def purge_webhook_deliveries(
    session: AsyncSession, _runtime: Runtime, cutoff: datetime, limit: int = BATCH
) -> int:
    oldest = (
        select(WebhookDelivery.organization_id, WebhookDelivery.id)
        .where(WebhookDelivery.created_at < cutoff)
        .order_by(WebhookDelivery.created_at)
        .limit(limit)
    )
    return await _delete(
        session,
        delete(WebhookDelivery).where(
            tuple_(WebhookDelivery.organization_id, WebhookDelivery.id).in_(oldest)
        ),
    )


async def _delete(session: AsyncSession, statement: Any) -> int:
    result = await session.execute(
        across_organizations(statement.execution_options(synchronize_session=False), _REASON)
    )
    return int(getattr(result, "rowcount", 0) or 0)


async def purge_step(ctx: TaskContext, now: datetime | None = None) -> bool:
    """One batch of each kind; True while a batch came back full (more is waiting)."""
    cutoff = (now or utcnow()) - timedelta(days=ctx.settings.retention_days)
    events = await ctx.transact(purge_call_events, cutoff, BATCH)
    deliveries = await ctx.transact(purge_webhook_deliveries, cutoff, BATCH)
    # Agents' own retention_days: recordings and transcripts of their ended calls.
    calls = await ctx.transact(expire_calls, now, CALL_BATCH)
    return events == BATCH or deliveries == BATCH or calls == CALL_BATCH


async def _run(ctx: TaskContext) -> None:
    await ctx.repeat(purge_step, interval=INTERVAL_SECONDS)


RETENTION = WorkerTask("retention", _run)
