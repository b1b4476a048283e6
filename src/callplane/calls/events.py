"""Call events: every move of a call is a row, and the same move a webhook event (DESIGN §10, §11).

The move's own UPDATE increments ``calls.event_sequence`` and returns it, so a call's events
are numbered 1, 2, 3... without any read-then-write race, whoever moves the call (a worker, a
cancel, the lease reaper).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.calls.service import CALL_NOT_FOUND, calls_wire
from callplane.errors import NotFound
from callplane.models.base import utcnow
from callplane.models.calls import Call, CallEvent
from callplane.runtime import Runtime
from callplane.webhooks.events import emit


async def record_call_event(
    session: AsyncSession, runtime: Runtime, call: Call, type_: str, data: Mapping[str, Any]
) -> None:
    """Write event number ``call.event_sequence`` and send it to webhook receivers.

    ``call`` is the row as the move left it (the UPDATE's RETURNING); the webhook carries it
    whole as ``data.call``, with ``data.sequence``.
    """
    at = utcnow()
    session.add(
        CallEvent(
            organization_id=call.organization_id,
            call_uuid=call.id,
            sequence=call.event_sequence,
            type=type_,
            at=at,
            data=dict(data),
        )
    )

    async def webhook_data() -> dict[str, Any]:
        [wire] = await calls_wire(session, runtime, call.organization_id, [call])
        return {"call": wire, "sequence": call.event_sequence}

    await emit(
        session,
        call.organization_id,
        type_,
        webhook_data,
        ordering=(str(call.id), call.event_sequence),
    )


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
