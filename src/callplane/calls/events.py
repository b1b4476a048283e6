"""Call events: every move of a call is a row, and the same move a webhook event
(docs/engine-core.md, docs/api-contract.md).

The move's own UPDATE increments ``calls.event_sequence`` and returns it, so a call's events
are numbered 1, 2, 3... without any read-then-write race, whoever moves the call (a worker, a
cancel, the lease reaper).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.calls.service import CALL_NOT_FOUND, calls_wire
from callplane.errors import NotFound
from callplane.models.base import utcnow
from callplane.models.calls import Call, CallEvent
from callplane.runtime import Runtime
from callplane.webhooks.events import OutboxEntry, Subscriber, emit_many, subscribers, subscribes


@dataclass(frozen=True)
class NewCallEvent:
    """Event number ``call.event_sequence`` of ``call``, the row as the move left it."""

    call: Call
    type: str
    data: Mapping[str, Any]
    #: The number its move gave it (default: the call's as it is now). A call moved twice in
    #: one group commit is one ORM object, whose ``event_sequence`` is the later move's by the
    #: time the batch is written: two events numbered alike broke the batch on its unique key.
    sequence: int = -1

    def __post_init__(self) -> None:
        if self.sequence < 0:
            object.__setattr__(self, "sequence", self.call.event_sequence)


async def record_call_event(
    session: AsyncSession, runtime: Runtime, call: Call, type_: str, data: Mapping[str, Any]
) -> None:
    """Write event number ``call.event_sequence`` and send it to webhook receivers.

    ``call`` is the row as the move left it (the UPDATE's RETURNING); the webhook carries it
    whole as ``data.call``, with ``data.sequence``.
    """
    await record_call_events(session, runtime, [NewCallEvent(call, type_, data)])


async def record_call_events(
    session: AsyncSession, runtime: Runtime, events: Sequence[NewCallEvent]
) -> None:
    """``record_call_event`` for many calls at once (the engine's group commit): one INSERT of
    the event rows, one query for the organizations' endpoints, the wire form of only the calls
    someone subscribes to (per organization), one INSERT each for the webhook events and jobs."""
    if not events:
        return
    at = utcnow()
    await session.execute(
        insert(CallEvent),
        [
            {
                "organization_id": e.call.organization_id,
                "call_uuid": e.call.id,
                "sequence": e.sequence,
                "type": e.type,
                "at": at,
                "data": _with_campaign(e),
            }
            for e in events
        ],
    )
    endpoints = await subscribers(session, (e.call.organization_id for e in events))
    sent: list[tuple[NewCallEvent, list[Subscriber]]] = []
    for e in events:
        targets = [s for s in endpoints[e.call.organization_id] if subscribes(s, e.type)]
        if targets:
            sent.append((e, targets))
    if not sent:
        return
    by_organization: dict[int, list[Call]] = {}
    for e, _ in sent:
        by_organization.setdefault(e.call.organization_id, []).append(e.call)
    # Keyed by (call, sequence): a call that moved twice in one batch has a row for each move.
    wires: dict[tuple[uuid.UUID, int], dict[str, Any]] = {}
    for organization_id, calls in by_organization.items():
        built = await calls_wire(session, runtime, organization_id, calls)
        for call, wire in zip(calls, built, strict=True):
            wires[(call.id, call.event_sequence)] = wire
    await emit_many(
        session,
        [
            OutboxEntry(
                organization_id=e.call.organization_id,
                type=e.type,
                data={
                    "call": wires[(e.call.id, e.call.event_sequence)],
                    "sequence": e.sequence,
                    **({"campaign_id": str(e.call.campaign_id)} if e.call.campaign_id else {}),
                },
                endpoints=targets,
                ordering=(str(e.call.id), e.sequence),
            )
            for e, targets in sent
        ],
    )


def _with_campaign(event: NewCallEvent) -> dict[str, Any]:
    """An attempt's every event names its campaign (``docs/campaigns.md``)."""
    data = dict(event.data)
    if event.call.campaign_id is not None:
        data["campaign_id"] = str(event.call.campaign_id)
    return data


async def list_call_events(
    session: AsyncSession, organization_id: int, call_uuid: uuid.UUID
) -> Sequence[CallEvent]:
    exists = await session.scalar(
        select(Call.id).where(Call.organization_id == organization_id, Call.id == call_uuid)
    )
    if exists is None:
        raise NotFound(CALL_NOT_FOUND)
    rows = await session.scalars(
        select(CallEvent)
        .where(CallEvent.organization_id == organization_id, CallEvent.call_uuid == call_uuid)
        .order_by(CallEvent.sequence)
    )
    return rows.all()


def event_wire(event: CallEvent) -> dict[str, Any]:
    return {"sequence": event.sequence, "type": event.type, "at": event.at, "data": event.data}
