"""The life of an agent run in the workers: claimed under a lease, then settled.

    running (no lease) ──claim──▶ running (leased) ──settle──▶ passed | failed | error | done
                                     ▲     │
             lease expired ──────────┘     └── renew (while the worker works)

As recording legs are: a claim takes the oldest unleased (or lapsed) run of any organization in
one transaction with a fresh token; only the holder of the token renews or settles it. A run
claimed MAX_ATTEMPTS times without settling (it kills every worker) becomes ``error``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.kit.tenancy import across_organizations
from callplane.models.agent_tests import AgentRun
from callplane.models.base import utcnow

MAX_ATTEMPTS = 3
_WHY = (
    "the agent-run queue: a worker takes the oldest waiting run of any organization, then works "
    "on it only through its own organization's rows"
)


@dataclass(frozen=True)
class Claim:
    organization_id: int
    run_id: uuid.UUID
    agent_id: int
    kind: str
    commit_id: uuid.UUID
    mode: str
    work: dict[str, Any]
    token: uuid.UUID
    attempts: int


def _claimable(now: datetime) -> Any:
    return (AgentRun.status == "running") & or_(
        AgentRun.lease_expires_at.is_(None), AgentRun.lease_expires_at < now
    )


async def run_waiting(session: AsyncSession) -> bool:
    """A cheap read, so an idle worker's poll never takes SQLite's write lock for nothing."""
    query = select(AgentRun.id).where(_claimable(utcnow())).limit(1)
    return await session.scalar(across_organizations(query, _WHY)) is not None


async def claim_run(session: AsyncSession, lease_seconds: float) -> Claim | None:
    now = utcnow()
    candidate = across_organizations(
        select(AgentRun.organization_id, AgentRun.id)
        .where(_claimable(now))
        .order_by(AgentRun.created_at, AgentRun.id)
        .limit(1)
        .with_for_update(skip_locked=True),
        _WHY,
    )
    row = (await session.execute(candidate)).first()
    if row is None:
        return None
    organization_id, run_id = row
    token = uuid.uuid4()
    claimed = (
        await session.execute(
            update(AgentRun)
            .where(
                AgentRun.organization_id == organization_id,
                AgentRun.id == run_id,
                _claimable(now),
            )
            .values(
                lease_token=token,
                lease_expires_at=now + timedelta(seconds=lease_seconds),
                attempts=AgentRun.attempts + 1,
            )
            .returning(
                AgentRun.agent_id,
                AgentRun.kind,
                AgentRun.commit_id,
                AgentRun.mode,
                AgentRun.work,
                AgentRun.attempts,
            )
            .execution_options(synchronize_session=False)
        )
    ).first()
    if claimed is None:
        return None
    agent_id, kind, commit_id, mode, work, attempts = claimed
    return Claim(organization_id, run_id, agent_id, kind, commit_id, mode, work, token, attempts)


def _held(claim: Claim) -> tuple[Any, ...]:
    return (
        AgentRun.organization_id == claim.organization_id,
        AgentRun.id == claim.run_id,
        AgentRun.status == "running",
        AgentRun.lease_token == claim.token,
    )


async def renew_lease(session: AsyncSession, claim: Claim, lease_seconds: float) -> bool:
    """False when the run is no longer this claim's: the work in hand is dropped."""
    result = await session.execute(
        update(AgentRun)
        .where(*_held(claim))
        .values(lease_expires_at=utcnow() + timedelta(seconds=lease_seconds))
        .returning(AgentRun.id)
        .execution_options(synchronize_session=False)
    )
    return result.first() is not None


async def settle(
    session: AsyncSession,
    claim: Claim,
    status: str,
    results: list[Any],
    error: str | None = None,
) -> bool:
    result = await session.execute(
        update(AgentRun)
        .where(*_held(claim))
        .values(
            status=status,
            results=results,
            error=error[:2000] if error else None,
            lease_token=None,
            lease_expires_at=None,
            finished_at=utcnow(),
        )
        .returning(AgentRun.id)
        .execution_options(synchronize_session=False)
    )
    return result.first() is not None
