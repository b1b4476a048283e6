"""The life of a recording leg in the worker: claimed under a lease, then finished or failed.

    pending ──claim──▶ processing ──finish──▶ transcribed
                          │  ▲  └────fail───▶ error
         lease expired ───┘  └── renew (while the worker works)

A claim takes one leg (of any organization: this is the worker's queue) in one transaction and
gives it a fresh lease token. Only the holder of the current token can renew, finish or fail
it; when a worker dies its lease runs out and the next claim takes the leg again, so a crash
never leaves a leg stuck in ``processing``. A leg claimed MAX_ATTEMPTS times without finishing
(its audio kills every worker that tries) becomes ``error`` instead of being tried for ever.

Every change of a leg locks its call first and recomputes the call's status and duration
(``service.refresh_call``) in the same transaction.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.external_calls import service
from callplane.models.base import utcnow
from callplane.models.external_calls import Recording

MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class Claim:
    organization_id: int
    recording_id: uuid.UUID
    external_call_id: uuid.UUID
    token: uuid.UUID
    storage_key: str | None
    content_type: str
    redact: bool
    attempts: int


#: Marks the queue's statements as spanning organizations on purpose (the worker serves them
#: all); the same execution option as ``callplane.kit.tenancy.across_organizations``.
_ACROSS_ORGANIZATIONS = {
    "callplane_across_organizations": "the transcription queue: a worker takes the oldest "
    "waiting leg of any organization, then works on it only through its own organization's rows"
}


def _claimable(now: datetime) -> Any:
    return and_(
        Recording.external_call_id.is_not(None),
        # Deleted and excluded legs are hidden everywhere (docs/api-contract.md#external-calls):
        # nobody waits for them.
        Recording.deleted.is_(False),
        Recording.excluded.is_(False),
        or_(
            Recording.status == "pending",
            # A processing leg whose lease lapsed, or that nobody holds (imported as
            # processing), is waiting for a worker like a pending one.
            and_(
                Recording.status == "processing",
                or_(Recording.lease_expires_at.is_(None), Recording.lease_expires_at < now),
            ),
        ),
    )


async def leg_waiting(session: AsyncSession) -> bool:
    """Whether any leg is claimable: a cheap read, so an idle worker's poll never takes the
    write lock (SQLite) just to find nothing."""
    query = select(Recording.id).where(_claimable(utcnow())).limit(1)
    found = await session.scalar(query.execution_options(**_ACROSS_ORGANIZATIONS))
    return found is not None


async def claim_leg(
    session: AsyncSession, lease_seconds: float, *, uploaded_before: datetime | None = None
) -> Claim | None:
    """Take the oldest claimable leg (uploaded before ``uploaded_before``, when given), or None
    when there is none.

    On PostgreSQL the candidate row is locked with SKIP LOCKED, so concurrent workers take
    different legs; on SQLite the write transaction is exclusive. The conditional UPDATE repeats
    the claimable test, so a leg is never held by two workers either way.
    """
    now = utcnow()
    candidate = (
        select(Recording.organization_id, Recording.id)
        .where(_claimable(now))
        .where(Recording.created_at <= (uploaded_before or now))
        .order_by(Recording.created_at, Recording.id)
        .limit(1)
        .with_for_update(skip_locked=True)
        .execution_options(**_ACROSS_ORGANIZATIONS)
    )
    row = (await session.execute(candidate)).first()
    if row is None:
        return None
    organization_id, recording_id = row
    token = uuid.uuid4()
    claimed = (
        await session.execute(
            update(Recording)
            .where(
                Recording.organization_id == organization_id,
                Recording.id == recording_id,
                _claimable(now),
            )
            .values(
                status="processing",
                lease_token=token,
                lease_expires_at=now + timedelta(seconds=lease_seconds),
                attempts=Recording.attempts + 1,
                updated_at=now,
            )
            .returning(
                Recording.external_call_id,
                Recording.storage_key,
                Recording.content_type,
                Recording.awaiting_redaction,
                Recording.attempts,
            )
            .execution_options(synchronize_session=False)
        )
    ).first()
    if claimed is None:
        return None
    external_call_id, storage_key, content_type, redact, attempts = claimed
    call = await service.lock_external_call(session, organization_id, external_call_id)
    await service.refresh_call(session, call)
    return Claim(
        organization_id=organization_id,
        recording_id=recording_id,
        external_call_id=external_call_id,
        token=token,
        storage_key=storage_key,
        content_type=content_type,
        redact=bool(redact),
        attempts=attempts,
    )


async def renew_lease(session: AsyncSession, claim: Claim, lease_seconds: float) -> bool:
    """Extend the lease; False when the leg is no longer this claim's (it expired and another
    worker took it), so the work in hand must be dropped."""
    now = utcnow()
    result = await session.execute(
        update(Recording)
        .where(*_held(claim))
        .values(lease_expires_at=now + timedelta(seconds=lease_seconds))
        .returning(Recording.id)
        .execution_options(synchronize_session=False)
    )
    return result.first() is not None


def _held(claim: Claim) -> tuple[Any, ...]:
    return (
        Recording.organization_id == claim.organization_id,
        Recording.id == claim.recording_id,
        Recording.status == "processing",
        Recording.lease_token == claim.token,
    )


async def _settle(session: AsyncSession, claim: Claim, values: dict[str, Any]) -> bool:
    call = await service.lock_external_call(session, claim.organization_id, claim.external_call_id)
    result = await session.execute(
        update(Recording)
        .where(*_held(claim))
        .values(lease_token=None, lease_expires_at=None, updated_at=utcnow(), **values)
        .returning(Recording.id)
        .execution_options(synchronize_session=False)
    )
    if result.first() is None:
        return False
    # No leg was loaded in this transaction before the update, so the legs read now are fresh.
    await service.refresh_call(session, call)
    return True


async def finish_leg(
    session: AsyncSession,
    claim: Claim,
    *,
    transcript: list[dict[str, Any]],
    summary: str | None,
    duration_seconds: float,
    content_type: str | None = None,
    size_bytes: int | None = None,
) -> bool:
    """The leg is transcribed (and, when it was waiting for redaction, playable again)."""
    values: dict[str, Any] = {
        "status": service.PROCESSED_STATUS,
        "transcript": transcript,
        "summary": summary,
        "duration_seconds": duration_seconds,
        "error": None,
        "awaiting_redaction": False,
    }
    if content_type is not None:
        values["content_type"] = content_type
    if size_bytes is not None:
        values["size_bytes"] = size_bytes
    return await _settle(session, claim, values)


async def fail_leg(
    session: AsyncSession, claim: Claim, reason: str, *, duration_seconds: float | None = None
) -> bool:
    """The leg is in ``error`` for good. A leg awaiting redaction keeps waiting: its audio,
    never redacted, gets no URL."""
    values: dict[str, Any] = {"status": "error", "error": reason[:1000]}
    if duration_seconds is not None:
        values["duration_seconds"] = duration_seconds
    return await _settle(session, claim, values)


async def release_leg(session: AsyncSession, claim: Claim) -> bool:
    """Give the leg back to the queue after a passing failure (storage unreachable)."""
    return await _settle(session, claim, {"status": "pending"})
