"""The campaign dialer: each worker's loop that turns due recipients into calls
(``docs/campaigns.md``).

Every round, first the attempts whose call has ended are applied to their recipients
(``campaigns.outcomes``); then each running campaign is served in a transaction of its own:

1. its row is locked (``FOR UPDATE SKIP LOCKED`` on PostgreSQL: a campaign another worker is
   serving is skipped; SQLite's write transaction is the lock), and on PostgreSQL the claim
   lock of its organization (``engine.claim``), so the organization's limit of calls holds;
2. the budget: ``max_concurrent`` minus its recipients ``calling``; the pace, from
   ``campaigns.pace_at``, which every dial moves on by 60 / ``calls_per_minute`` seconds (one
   clock in the database shared by every worker, not a counter per process); this worker's free
   slots less ``CALLPLANE_INBOUND_RESERVE``; the organization's ``CALLPLANE_MAX_CONCURRENT_CALLS``;
3. the due recipients through their index, soonest first: one outside its calling hours waits
   for the next open moment; one on the do-not-call list, read now, becomes ``suppressed``;
   each other one gets an ordinary call (``calls.service.create_call``, as ``POST /calls``:
   the branch head at this moment, or the pinned commit), claimed by this worker in the same
   transaction (``dialing``, with its lease), and the recipient becomes ``calling``.

The call and the recipient's move commit together. A worker killed after the commit leaves a
call in ``dialing`` under a lease; the reaper fails it (``engine.leases``), never dials it, and
its end is an outcome like any other: an attempt is never dialled twice.
"""

from __future__ import annotations

import logging
import math
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, bindparam, func, select, text, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.agents.refs import MAIN
from callplane.calls.events import NewCallEvent, record_call_events
from callplane.calls.schemas import CallCreate
from callplane.calls.service import add_calls, prepare_call
from callplane.campaigns import outcomes
from callplane.campaigns.donotcall import suppressed_among
from callplane.campaigns.hours import instant, next_open, recipient_zones
from callplane.engine.calls import place_call
from callplane.engine.claim import CLAIM_LOCK_SPACE
from callplane.engine.lifecycle import ACTIVE, CLAIMED, CallRef
from callplane.engine.switchboard import Switchboard
from callplane.errors import InvalidInput
from callplane.jobs import TaskContext, WorkerTask
from callplane.kit import wakeups
from callplane.kit.tenancy import across_organizations, select_owned, update_owned
from callplane.models.base import utcnow
from callplane.models.calls import Call
from callplane.models.campaigns import Campaign, CampaignRecipient
from callplane.runtime import Runtime

log = logging.getLogger("callplane.engine.dialer")

#: Running campaigns looked at per round.
CAMPAIGNS_PER_ROUND = 100
#: Due recipients read per campaign and round beyond those it may dial: the ones outside their
#: hours are moved on to their next window meanwhile.
LOOKAHEAD = 50
_RECIPIENTS = CampaignRecipient.__table__
#: Core, not the ORM entity: with a list of rows the ORM would take it for its own bulk update.
_CALLING = (
    update_owned(_RECIPIENTS, bindparam("org"))
    .where(_RECIPIENTS.c.id == bindparam("recipient"))
    .values(
        status="calling",
        attempts=bindparam("tries"),
        current_call_id=bindparam("call"),
        call_ids=bindparam("calls", type_=_RECIPIENTS.c.call_ids.type),
        updated_at=bindparam("now", type_=_RECIPIENTS.c.updated_at.type),
    )
)
_ORG_LOCK = text("SELECT pg_try_advisory_xact_lock(:space, :org)")


@dataclass(frozen=True)
class Served:
    calls: list[Call]
    #: More recipients were due than the round took.
    more: bool


def _pace(campaign: Campaign, now: datetime) -> tuple[float, datetime, int]:
    """(seconds between dials, the pace clock, dials allowed now). The clock never lags more
    than a second's worth of dials behind now, so an idle spell is not made up in a burst."""
    per_minute = int(campaign.pacing["calls_per_minute"])
    interval = 60.0 / per_minute
    burst = max(1, math.ceil(per_minute / 60))
    clock = campaign.pace_at or now
    clock = max(clock, now - timedelta(seconds=interval * burst))
    if clock > now:
        return interval, clock, 0
    return interval, clock, int((now - clock).total_seconds() / interval) + 1


async def serve_campaign(
    session: AsyncSession,
    runtime: Runtime,
    organization_id: int,
    campaign_id: uuid.UUID,
    worker_id: str,
    room: int,
) -> Served:
    """One campaign's round (see the module docstring). Commit after."""
    postgres = session.get_bind().dialect.name == "postgresql"
    query = select_owned(Campaign, organization_id).where(
        Campaign.id == campaign_id, Campaign.status == "running"
    )
    if postgres:
        query = query.with_for_update(skip_locked=True)
    campaign: Campaign | None = await session.scalar(
        query.execution_options(populate_existing=True)
    )
    if campaign is None:
        return Served([], False)
    now = utcnow()
    end_at = instant(campaign.schedule.get("end_at"))
    if end_at is not None and now >= end_at:
        await outcomes.expire_queued(session, organization_id, campaign_id)
        await outcomes.complete_if_done(session, organization_id, campaign_id)
        return Served([], False)
    if postgres and not await session.scalar(
        _ORG_LOCK.bindparams(space=CLAIM_LOCK_SPACE, org=organization_id)
    ):
        return Served([], False)  # another worker is claiming this organization's calls
    calling = int(
        await session.scalar(
            select_owned(CampaignRecipient, organization_id, func.count()).where(
                CampaignRecipient.campaign_id == campaign_id,
                CampaignRecipient.status == "calling",
            )
        )
        or 0
    )
    active = int(
        await session.scalar(
            select_owned(Call, organization_id, func.count()).where(Call.status.in_(ACTIVE))
        )
        or 0
    )
    interval, clock, paced = _pace(campaign, now)
    take = min(
        int(campaign.pacing["max_concurrent"]) - calling,
        paced,
        room,
        runtime.settings.max_concurrent_calls - active,
    )
    if take <= 0:
        if calling == 0:
            await outcomes.complete_if_done(session, organization_id, campaign_id)
        return Served([], False)
    due = list(
        await session.scalars(due_recipients(organization_id, campaign_id, now, take + LOOKAHEAD))
    )
    if not due:
        if calling == 0:
            await outcomes.complete_if_done(session, organization_id, campaign_id)
        return Served([], False)
    chosen: list[CampaignRecipient] = []
    for recipient in due:
        zones = recipient_zones(campaign.schedule, recipient.phone_number, recipient.timezone)
        opens = next_open(campaign.schedule, zones, now)
        if opens is None:
            await _move(session, recipient, status="expired")
        elif opens > now:
            await _move(session, recipient, next_attempt_at=opens)
        elif len(chosen) < take:
            chosen.append(recipient)
    listed = await suppressed_among(session, organization_id, (r.phone_number for r in chosen))
    created: list[tuple[CampaignRecipient, Call]] = []
    for recipient in chosen:
        if recipient.phone_number in listed:
            await _move(session, recipient, status="suppressed")
            continue
        call = await _attempt(session, campaign, recipient)
        if call is None:
            await _move(session, recipient, status="exhausted", last_outcome="failed")
            continue
        created.append((recipient, call))
    if created:
        await add_calls(session, [call for _, call in created])
    claimed = await _claim(session, runtime, organization_id, worker_id, [c for _, c in created])
    if created:
        # One statement for all of them (executemany), not one round trip each.
        await session.execute(
            _CALLING,
            [
                {
                    "org": organization_id,
                    "recipient": recipient.id,
                    "tries": recipient.attempts + 1,
                    "call": call.id,
                    "calls": [*recipient.call_ids, str(call.id)],
                    "now": now,
                }
                for recipient, call in created
            ],
        )
    if created:
        await session.execute(
            update_owned(Campaign, organization_id)
            .where(Campaign.id == campaign_id)
            .values(pace_at=clock + timedelta(seconds=interval * len(created)))
            .execution_options(synchronize_session=False)
        )
    return Served(claimed, more=len(due) > len(chosen))


def due_recipients(
    organization_id: int, campaign_id: uuid.UUID, now: datetime, limit: int
) -> Select[Any]:
    """The recipients whose next attempt is due, soonest first: a range of
    ``ix_campaign_recipients_due`` (``tests/test_campaign_scale.py`` shows the plan)."""
    return (
        select_owned(CampaignRecipient, organization_id)
        .where(
            CampaignRecipient.campaign_id == campaign_id,
            CampaignRecipient.status == "queued",
            CampaignRecipient.next_attempt_at <= now,
        )
        .order_by(CampaignRecipient.next_attempt_at)
        .limit(limit)
    )


async def _attempt(
    session: AsyncSession, campaign: Campaign, recipient: CampaignRecipient
) -> Call | None:
    """The attempt's call, prepared as ``POST /calls`` prepares one (its commit resolved now:
    the branch head, or the pinned commit); None when the call cannot be made at all (its
    agent is gone, a required variable is missing)."""
    try:
        body = CallCreate(
            to_number=recipient.phone_number,
            from_number=campaign.from_number,
            agent_id=campaign.agent_uuid,
            # On main (the default) the agent's traffic split, if any, picks the branch per
            # recipient (agents/traffic.py), as for any call that names no other branch.
            agent_branch_name=campaign.agent_branch_name
            if campaign.agent_commit_id is None and campaign.agent_branch_name != MAIN
            else None,
            agent_commit_id=campaign.agent_commit_id,
            params={**campaign.params, **recipient.params},
        )
        # Everything that can refuse the call does so before anything is written.
        return await prepare_call(session, campaign.organization_id, body, campaign_id=campaign.id)
    except (InvalidInput, ValueError) as exc:
        log.warning(
            "campaign attempt cannot be made",
            extra={"campaign_id": str(campaign.id), "error": str(exc)},
        )
        return None


async def _claim(
    session: AsyncSession, runtime: Runtime, organization_id: int, worker_id: str, calls: list[Call]
) -> list[Call]:
    """enqueued → dialing by this worker, in the transaction that created them (no other
    worker ever sees them enqueued)."""
    if not calls:
        return []
    now = utcnow()
    claimed = list(
        await session.scalars(
            update_owned(Call, organization_id)
            .where(
                tuple_(Call.organization_id, Call.id).in_([(organization_id, c.id) for c in calls])
            )
            .where(Call.status == "enqueued")
            .values(
                status=CLAIMED.target,
                worker_id=worker_id,
                lease_expires_at=now + timedelta(seconds=runtime.settings.worker_lease_seconds),
                event_sequence=Call.event_sequence + 1,
                updated_at=now,
            )
            .returning(Call)
            .execution_options(synchronize_session=False, populate_existing=True)
        )
    )
    await record_call_events(
        session,
        runtime,
        [NewCallEvent(c, CLAIMED.event_type, {"status": c.status}) for c in claimed],
    )
    return claimed


async def _move(session: AsyncSession, recipient: CampaignRecipient, **values: Any) -> None:
    await session.execute(
        update_owned(CampaignRecipient, recipient.organization_id)
        .where(CampaignRecipient.id == recipient.id)
        .values(updated_at=utcnow(), **values)
        .execution_options(synchronize_session=False)
    )


async def running_campaigns(
    session: AsyncSession, _runtime: Runtime
) -> list[tuple[int, uuid.UUID]]:
    rows = await session.execute(
        across_organizations(
            select(Campaign.organization_id, Campaign.id)
            .where(Campaign.status == "running")
            .order_by(Campaign.pace_at)
            .limit(CAMPAIGNS_PER_ROUND),
            "the dialer serves the running campaigns of every organization",
        )
    )
    return [(org, campaign_id) for org, campaign_id in rows]


async def apply_outcomes(session: AsyncSession, _runtime: Runtime) -> int:
    ended = await outcomes.ended_attempts(session)
    for organization_id, campaign_id in await outcomes.record_outcomes(session, ended):
        await outcomes.complete_if_done(session, organization_id, campaign_id)
    return len(ended)


def room_of(board: Switchboard) -> int:
    """Slots of this worker a campaign may take: never the inbound reserve."""
    if board.draining:
        return 0
    return board.concurrency - len(board.calls) - board.settings.inbound_reserve


async def dial(board: Switchboard) -> bool:
    """One round; True when more work may be waiting at once."""
    ended = await board.jobs.transact(apply_outcomes)
    more = ended == outcomes.BATCH
    for organization_id, campaign_id in await board.jobs.transact(running_campaigns):
        room = room_of(board)
        if room <= 0:
            break
        served = await board.jobs.transact(
            serve_campaign, organization_id, campaign_id, board.worker_id, room
        )
        for call in served.calls:
            ref = CallRef(call.organization_id, call.id, board.worker_id)
            board.hold(ref, place_call(board, call, ref))
        more = more or (served.more and bool(served.calls))
    return more


def dialer_task(board: Switchboard) -> WorkerTask:
    async def step(_ctx: TaskContext) -> bool:
        return await dial(board)

    async def run(ctx: TaskContext) -> None:
        await ctx.repeat(step, interval=ctx.settings.worker_poll_seconds, wake_on=wakeups.CALLS)

    return WorkerTask("dialer", run)
