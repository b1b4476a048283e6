"""What an attempt's end does to its recipient, and when a campaign is done.

    call ended as                     outcome     recipient
    completed, answered by a person   human       completed
    completed, answered by voicemail  voicemail   ┐ queued again at the call's end + delay_seconds
    busy                              busy        │ when the outcome is in retry.on and attempts
    no_answer                         no_answer   │ remain (past end_at: expired); otherwise
    failed (also a lost lease)        failed      ┘ voicemail (a voicemail) or exhausted

A person who asked during the attempt not to be called again (``tools/opt_out.py``: their
number listed with that call's id as the reason) is ``opted_out``. A recipient of a cancelled
campaign whose attempt was in flight is ``cancelled`` unless a person
answered. Each change is a conditional UPDATE on the recipient still ``calling`` that very call,
so a second worker reading the same ended call changes nothing.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.campaigns.donotcall import opt_out_reason
from callplane.campaigns.hours import instant
from callplane.campaigns.service import emit_campaign_event
from callplane.kit.tenancy import across_organizations, select_owned, update_owned
from callplane.models.base import utcnow
from callplane.models.calls import Call
from callplane.models.campaigns import Campaign, CampaignRecipient, Suppression

ENDED = ("completed", "failed", "no_answer", "busy", "cancelled")
#: Ended attempts read per round.
BATCH = 200


@dataclass(frozen=True)
class Ended:
    organization_id: int
    recipient_id: uuid.UUID
    campaign_id: uuid.UUID
    call_id: uuid.UUID
    attempts: int
    call_status: str
    answered_by: str | None
    ended_at: datetime
    retry: dict[str, Any]
    schedule: dict[str, Any]
    campaign_status: str
    #: The reason the number is on the do-not-call list now, if it is.
    listed_reason: str | None = None


def outcome_of(call_status: str, answered_by: str | None) -> str:
    if call_status == "completed":
        return "voicemail" if answered_by == "voicemail" else "human"
    return call_status if call_status in ("busy", "no_answer") else "failed"


def next_step(ended: Ended) -> tuple[str, str, datetime | None]:
    """(recipient status, last outcome, next attempt) after an attempt."""
    outcome = outcome_of(ended.call_status, ended.answered_by)
    if ended.listed_reason == opt_out_reason(ended.call_id):
        return "opted_out", outcome, None
    if outcome == "human":
        return "completed", outcome, None
    if ended.campaign_status == "cancelled":
        return "cancelled", outcome, None
    retry = ended.retry
    if outcome in retry["on"] and ended.attempts < retry["max_attempts"]:
        at = ended.ended_at + timedelta(seconds=retry["delay_seconds"])
        end_at = instant(ended.schedule.get("end_at"))
        if end_at is not None and at >= end_at:
            return "expired", outcome, None
        return "queued", outcome, at
    return ("voicemail" if outcome == "voicemail" else "exhausted"), outcome, None


async def ended_attempts(session: AsyncSession) -> list[Ended]:
    """Attempts in flight whose call has ended, of every organization."""
    r, c, k, s = CampaignRecipient, Call, Campaign, Suppression
    rows = await session.execute(
        across_organizations(
            select(
                r.organization_id,
                r.id,
                r.campaign_id,
                r.current_call_id,
                r.attempts,
                c.status,
                c.answered_by,
                func.coalesce(c.ended_at, c.updated_at),
                k.retry,
                k.schedule,
                k.status,
                s.reason,
            )
            .join(c, and_(c.organization_id == r.organization_id, c.id == r.current_call_id))
            .join(k, and_(k.organization_id == r.organization_id, k.id == r.campaign_id))
            .outerjoin(
                s, and_(s.organization_id == r.organization_id, s.phone_number == r.phone_number)
            )
            .where(r.status == "calling", c.status.in_(ENDED))
            .limit(BATCH),
            "the dialer records the end of every organization's attempts",
        )
    )
    return [Ended(*row) for row in rows]


async def record_outcomes(session: AsyncSession, ended: list[Ended]) -> set[tuple[int, uuid.UUID]]:
    """Apply each ended attempt to its recipient; returns the campaigns touched."""
    now = utcnow()
    touched: set[tuple[int, uuid.UUID]] = set()
    for e in ended:
        status, outcome, next_at = next_step(e)
        values: dict[str, Any] = {
            "status": status,
            "last_outcome": outcome,
            "current_call_id": None,
            "updated_at": now,
        }
        if next_at is not None:
            values["next_attempt_at"] = next_at
        await session.execute(
            update_owned(CampaignRecipient, e.organization_id)
            .where(
                CampaignRecipient.id == e.recipient_id,
                CampaignRecipient.status == "calling",
                CampaignRecipient.current_call_id == e.call_id,
            )
            .values(**values)
            .execution_options(synchronize_session=False)
        )
        touched.add((e.organization_id, e.campaign_id))
    return touched


async def complete_if_done(
    session: AsyncSession, organization_id: int, campaign_id: uuid.UUID
) -> bool:
    """running → completed once no recipient is queued or calling (and campaign.completed).
    The campaign's row is locked first, as an upload of recipients locks it: an upload that
    committed meanwhile is seen by the check below, never completed over."""
    locked = await session.scalar(
        select_owned(Campaign, organization_id, Campaign.id)
        .where(Campaign.id == campaign_id, Campaign.status == "running")
        .with_for_update()
    )
    if locked is None:
        return False
    waiting = await session.scalar(
        select_owned(CampaignRecipient, organization_id, CampaignRecipient.id)
        .where(
            CampaignRecipient.campaign_id == campaign_id,
            CampaignRecipient.status.in_(("queued", "calling")),
        )
        .limit(1)
    )
    if waiting is not None:
        return False
    now = utcnow()
    done: Campaign | None = await session.scalar(
        update_owned(Campaign, organization_id)
        .where(Campaign.id == campaign_id, Campaign.status == "running")
        .values(status="completed", finished_at=now, updated_at=now)
        .returning(Campaign)
        .execution_options(synchronize_session=False, populate_existing=True)
    )
    if done is None:
        return False
    await emit_campaign_event(session, organization_id, done, "campaign.completed")
    return True


async def expire_queued(
    session: AsyncSession, organization_id: int, campaign_id: uuid.UUID
) -> None:
    """Past the schedule's end_at: every recipient still waiting is expired (one statement)."""
    await session.execute(
        update_owned(CampaignRecipient, organization_id)
        .where(
            CampaignRecipient.campaign_id == campaign_id,
            CampaignRecipient.status == "queued",
        )
        .values(status="expired", updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
