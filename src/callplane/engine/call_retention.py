"""Call retention (``docs/privacy.md``): an agent's ``retention_days`` after a call ended, the
call's recording and transcript text are deleted; the call row stays, with
``transcript_deleted_at`` set and no recording URL.

The RETENTION worker task runs it with the other purges (``engine.retention``), and
``callplane retention run [--as-of TIMESTAMP]`` runs it once. Each call is settled in the
transaction that claims it (``UPDATE … WHERE transcript_deleted_at IS NULL``): workers running
it side by side never delete a call twice, and a call done once is never touched again. Each
deletion is an audit event of actor ``system`` in that same transaction.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.audit.chain import Event, append
from callplane.kit.tenancy import across_organizations, select_owned, update_owned
from callplane.media.storage import Storage
from callplane.models.agents import AgentCommit
from callplane.models.base import utcnow
from callplane.models.calls import Call
from callplane.models.external_calls import Recording
from callplane.runtime import Runtime

#: Calls per transaction.
BATCH = 100
_REASON = "retention reads every organization's agent commits for their retention_days"


def _retention_days(dialect_name: str) -> sa.ColumnElement[str]:
    if dialect_name == "postgresql":
        return sa.func.jsonb_extract_path_text(AgentCommit.config, "retention_days")
    return sa.func.json_extract(AgentCommit.config, "$.retention_days")


async def _commits_with_retention(session: AsyncSession) -> list[tuple[int, str, int]]:
    days = _retention_days(session.get_bind().dialect.name)
    rows = await session.execute(
        across_organizations(
            sa.select(AgentCommit.organization_id, AgentCommit.id, days).where(days.is_not(None)),
            _REASON,
        )
    )
    return [(org, str(commit_id), int(value)) for org, commit_id, value in rows]


async def _forget(
    session: AsyncSession, storage: Storage, organization_id: int, call_id: uuid.UUID, now: datetime
) -> bool:
    claimed = await session.execute(
        update_owned(Call, organization_id)
        .where(Call.id == call_id, Call.transcript_deleted_at.is_(None))
        .values(transcripts=[], summary=None, analysis_results=[], transcript_deleted_at=now)
        .returning(Call.id)
        .execution_options(synchronize_session=False)
    )
    if claimed.first() is None:
        return False  # another worker got there first
    recordings = (
        await session.execute(
            select_owned(Recording, organization_id, Recording.id, Recording.storage_key).where(
                Recording.call_id == call_id, Recording.storage_key.is_not(None)
            )
        )
    ).all()
    for _recording_id, key in recordings:
        await storage.delete(key)
    if recordings:
        await session.execute(
            update_owned(Recording, organization_id)
            .where(Recording.call_id == call_id)
            .values(deleted=True, storage_key=None)
            .execution_options(synchronize_session=False)
        )
    await append(
        session,
        Event(
            organization_id=organization_id,
            at=now,
            actor="system",
            action="retention.delete",
            resource_type="calls",
            resource_id=str(call_id),
        ),
    )
    return True


async def expire_calls(
    session: AsyncSession, runtime: Runtime, as_of: datetime | None = None, limit: int = BATCH
) -> int:
    """The worker task's step (``jobs.TaskContext.transact``)."""
    return await forget_expired(session, runtime.storage, as_of, limit)


async def forget_expired(
    session: AsyncSession, storage: Storage, as_of: datetime | None = None, limit: int = BATCH
) -> int:
    """Up to ``limit`` expired calls forgotten in this transaction; how many."""
    now = as_of or utcnow()
    done = 0
    for organization_id, commit_id, days in await _commits_with_retention(session):
        if done >= limit:
            break
        expired = await session.scalars(
            select_owned(Call, organization_id, Call.id)
            .where(
                Call.agent_commit_id == commit_id,
                Call.transcript_deleted_at.is_(None),
                Call.ended_at < now - timedelta(days=days),
            )
            .order_by(Call.ended_at)
            .limit(limit - done)
        )
        for call_id in expired.all():
            done += await _forget(session, storage, organization_id, call_id, utcnow())
    return done
