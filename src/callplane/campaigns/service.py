"""Campaigns: create, read, change and move them through their states. Services flush, never
commit.

    draft ──start──▶ running ◀──resume── paused
                       │  └────pause────▶ │
                       ▼                  ▼
                   completed          cancelled   (cancel: from draft, running or paused)

Each move is one conditional UPDATE … RETURNING: of two requests starting the same campaign at
once, exactly one finds it still ``draft``; the other matches nothing and gets 409. Starting a
campaign touches only its own row, whatever its number of recipients: they wait as ``queued``
from the moment they are added, and the dialer serves only running campaigns.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.agents.service import resolve_for_call
from callplane.campaigns.schemas import CampaignCreate, CampaignUpdate, Pacing, Retry, Schedule
from callplane.errors import Conflict, InvalidInput, NotFound
from callplane.kit import wakeups
from callplane.kit.pagination import count, offset
from callplane.kit.tenancy import select_owned, update_owned
from callplane.models.base import utcnow
from callplane.models.campaigns import RECIPIENT_STATUSES, Campaign, CampaignRecipient
from callplane.models.phone_numbers import PhoneNumber
from callplane.webhooks.events import emit

CAMPAIGN_NOT_FOUND = "Campaign not found"


@dataclass(frozen=True)
class Transition:
    verb: str
    source: tuple[str, ...]
    target: str
    #: the webhook event the move sends, if any
    event: str | None


START = Transition("started", ("draft",), "running", "campaign.started")
PAUSE = Transition("paused", ("running",), "paused", "campaign.paused")
RESUME = Transition("resumed", ("paused",), "running", None)
CANCEL = Transition("cancelled", ("draft", "running", "paused"), "cancelled", None)
TRANSITIONS = {"start": START, "pause": PAUSE, "resume": RESUME, "cancel": CANCEL}


def settings_json(model: Schedule | Retry | Pacing) -> dict[str, Any]:
    return model.model_dump(mode="json")


async def create_campaign(
    session: AsyncSession, organization_id: int, body: CampaignCreate
) -> Campaign:
    # Checked now so a typo is a 422 at once; a branch's head is still taken at each dial.
    await resolve_for_call(
        session,
        organization_id,
        agent_uuid=body.agent_id,
        branch_name=body.agent_branch_name,
        commit_id=body.agent_commit_id,
    )
    if body.from_number is not None:
        owned = await session.scalar(
            select_owned(PhoneNumber, organization_id, PhoneNumber.id).where(
                PhoneNumber.number == body.from_number
            )
        )
        if owned is None:
            raise InvalidInput(
                "from_number: is not a number of the organization", loc=("body", "from_number")
            )
    now = utcnow()
    campaign = Campaign(
        organization_id=organization_id,
        id=uuid.uuid4(),
        name=body.name,
        agent_uuid=body.agent_id,
        agent_branch_name=None if body.agent_commit_id else (body.agent_branch_name or "main"),
        agent_commit_id=body.agent_commit_id,
        from_number=body.from_number,
        params=body.params,
        schedule=settings_json(body.schedule),
        retry=settings_json(body.retry),
        pacing=settings_json(body.pacing),
        status="draft",
        created_at=now,
        updated_at=now,
    )
    session.add(campaign)
    await session.flush()
    return campaign


async def get_campaign(
    session: AsyncSession, organization_id: int, campaign_uuid: uuid.UUID
) -> Campaign:
    campaign: Campaign | None = await session.scalar(
        select_owned(Campaign, organization_id).where(Campaign.id == campaign_uuid)
    )
    if campaign is None:
        raise NotFound(CAMPAIGN_NOT_FOUND)
    return campaign


async def list_campaigns(
    session: AsyncSession, organization_id: int, *, page: int, page_size: int
) -> tuple[Sequence[Campaign], int]:
    query = select_owned(Campaign, organization_id)
    total = await count(session, query)
    rows = await session.scalars(
        query.order_by(Campaign.created_at.desc(), Campaign.id.desc())
        .limit(page_size)
        .offset(offset(page, page_size))
    )
    return rows.all(), total


async def update_campaign(
    session: AsyncSession, organization_id: int, campaign_uuid: uuid.UUID, body: CampaignUpdate
) -> Campaign:
    values: dict[str, Any] = {"updated_at": utcnow()}
    if body.name is not None:
        values["name"] = body.name
    for name in ("schedule", "retry", "pacing"):
        part = getattr(body, name)
        if part is not None:
            values[name] = settings_json(part)
    changed: Campaign | None = await session.scalar(
        update_owned(Campaign, organization_id)
        .where(Campaign.id == campaign_uuid, Campaign.status.in_(("draft", "paused")))
        .values(**values)
        .returning(Campaign)
        .execution_options(synchronize_session=False)
    )
    if changed is None:
        status = (await get_campaign(session, organization_id, campaign_uuid)).status
        raise Conflict(f"Campaign cannot be changed while {status} (only draft or paused)")
    return changed


async def move_campaign(
    session: AsyncSession, organization_id: int, campaign_uuid: uuid.UUID, move: Transition
) -> Campaign:
    now = utcnow()
    values: dict[str, Any] = {"status": move.target, "updated_at": now}
    if move is START:
        values.update(started_at=now, pace_at=now)
    elif move is RESUME:
        values["pace_at"] = now
    elif move is CANCEL:
        values["finished_at"] = now
    moved: Campaign | None = await session.scalar(
        update_owned(Campaign, organization_id)
        .where(Campaign.id == campaign_uuid, Campaign.status.in_(move.source))
        .values(**values)
        .returning(Campaign)
        .execution_options(synchronize_session=False)
    )
    if moved is None:
        status = (await get_campaign(session, organization_id, campaign_uuid)).status
        raise Conflict(f"Campaign cannot be {move.verb}: its status is {status}")
    if move is CANCEL:
        await session.execute(
            update_owned(CampaignRecipient, organization_id)
            .where(
                CampaignRecipient.campaign_id == campaign_uuid,
                CampaignRecipient.status == "queued",
            )
            .values(status="cancelled", updated_at=now)
            .execution_options(synchronize_session=False)
        )
    if move.target == "running":
        await wakeups.announce(session, wakeups.CALLS)  # the dialers, at once
    if move.event is not None:
        await emit_campaign_event(session, organization_id, moved, move.event)
    return moved


async def emit_campaign_event(
    session: AsyncSession, organization_id: int, campaign: Campaign, type_: str
) -> None:
    async def data() -> dict[str, Any]:
        counts = await counts_of(session, organization_id, [campaign.id])
        return {"campaign": campaign_wire(campaign, counts[campaign.id])}

    await emit(session, organization_id, type_, data)


async def counts_of(
    session: AsyncSession, organization_id: int, campaign_uuids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, dict[str, int]]:
    """Each campaign's recipients by status and its attempts, in one grouped query over the
    recipients' index."""
    found: dict[uuid.UUID, dict[str, int]] = {
        c: {"total": 0, **dict.fromkeys(RECIPIENT_STATUSES, 0), "attempts": 0}
        for c in campaign_uuids
    }
    if not campaign_uuids:
        return found
    rows = await session.execute(
        select_owned(
            CampaignRecipient,
            organization_id,
            CampaignRecipient.campaign_id,
            CampaignRecipient.status,
            func.count(),
            func.coalesce(func.sum(CampaignRecipient.attempts), 0),
        )
        .where(CampaignRecipient.campaign_id.in_(list(campaign_uuids)))
        .group_by(CampaignRecipient.campaign_id, CampaignRecipient.status)
    )
    for campaign_id, status, n, attempts in rows:
        counts = found[campaign_id]
        counts[status] = int(n)
        counts["total"] += int(n)
        counts["attempts"] += int(attempts)
    return found


def _text(value: uuid.UUID | None) -> str | None:
    return None if value is None else str(value)


def campaign_wire(campaign: Campaign, counts: dict[str, int]) -> dict[str, Any]:
    return {
        "id": str(campaign.id),
        "name": campaign.name,
        "agent_id": _text(campaign.agent_uuid),
        "agent_branch_name": campaign.agent_branch_name,
        "agent_commit_id": _text(campaign.agent_commit_id),
        "from_number": campaign.from_number,
        "params": campaign.params,
        "status": campaign.status,
        "schedule": campaign.schedule,
        "retry": campaign.retry,
        "pacing": campaign.pacing,
        "counts": counts,
        "created_at": campaign.created_at,
        "started_at": campaign.started_at,
        "finished_at": campaign.finished_at,
    }


async def campaigns_wire(
    session: AsyncSession, organization_id: int, campaigns: Sequence[Campaign]
) -> list[dict[str, Any]]:
    counts = await counts_of(session, organization_id, [c.id for c in campaigns])
    return [campaign_wire(c, counts[c.id]) for c in campaigns]
