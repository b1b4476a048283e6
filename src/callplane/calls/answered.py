"""Calls that start answered: an inbound INVITE to one of the organization's numbers, a web call
from a browser. Both are ``in_progress`` from their first moment (the inbound move of
docs/engine-core.md), held by the worker that answered them."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.agents.service import ResolvedAgent
from callplane.calls.events import record_call_event
from callplane.calls.service import add_call
from callplane.models.base import utcnow
from callplane.models.calls import Call
from callplane.runtime import Runtime


async def add_answered_call(
    session: AsyncSession,
    runtime: Runtime,
    *,
    organization_id: int,
    direction: str,
    worker_id: str,
    agent: ResolvedAgent | None,
    from_number: str | None = None,
    to_number: str | None = None,
    params: dict[str, Any] | None = None,
) -> Call:
    """A call that starts answered (an inbound INVITE, a web call): ``in_progress`` at once,
    held by ``worker_id`` under a lease, running ``agent``'s commit, with its first event
    (``call.in_progress``, the inbound move of docs/engine-core.md) written in the same
    transaction."""
    now = utcnow()
    call = Call(
        organization_id=organization_id,
        id=uuid.uuid4(),
        simple_uuid=uuid.uuid4(),
        from_number=from_number,
        to_number=to_number,
        status="in_progress",
        direction=direction,
        started_at=now,
        answered_by="human",
        agent_uuid=agent.agent_uuid if agent else None,
        agent_branch=str(agent.branch_uuid) if agent and agent.branch_uuid else None,
        agent_branch_name=agent.branch_name if agent else None,
        agent_commit_id=str(agent.commit_id) if agent else None,
        worker_id=worker_id,
        lease_expires_at=now + timedelta(seconds=runtime.settings.worker_lease_seconds),
        event_sequence=1,
        params=params or {},
        external_identifiers={},
        keyterms=[],
        analyzers=[],
        analysis_results=[],
        transcripts=[],
        transferred=False,
        created_at=now,
        updated_at=now,
    )
    await add_call(session, call, [])
    await record_call_event(
        session,
        runtime,
        call,
        "call.in_progress",
        {"status": "in_progress", "answered_by": "human", "direction": direction},
    )
    return call
