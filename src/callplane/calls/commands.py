"""What the API and the dashboard do to a call: the change itself plus what must follow it.

A new call wakes the workers (so it is claimed promptly, not at the next poll); a cancel records
the call's ``call.cancelled`` event and its webhooks. Both entry points go through here, so neither
can forget a consequence.
"""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.calls import events, service
from callplane.calls.schemas import CallCreate
from callplane.campaigns.donotcall import is_suppressed
from callplane.errors import InvalidInput
from callplane.kit import wakeups
from callplane.models.calls import Call
from callplane.runtime import Runtime


async def place_call(
    session: AsyncSession, runtime: Runtime, organization_id: int, body: CallCreate
) -> Call:
    if body.simulate is not None and runtime.settings.telephony != "simulated":
        raise InvalidInput(
            "simulate: is only for the simulated network (CALLPLANE_TELEPHONY=simulated)",
            loc=("body", "simulate"),
        )
    if not body.ignore_suppression and await is_suppressed(
        session, organization_id, body.to_number
    ):
        raise InvalidInput(
            "to_number: is on the do-not-call list (send ignore_suppression: true for a call "
            "the person asked for)",
            loc=("body", "to_number"),
        )
    call = await service.create_call(session, organization_id, body)
    await wakeups.announce(session, wakeups.CALLS)
    return call


async def cancel_call(
    session: AsyncSession, runtime: Runtime, organization_id: int, call_uuid: uuid.UUID
) -> None:
    cancelled = await service.cancel_call(session, organization_id, call_uuid)
    if cancelled is not None:
        await events.record_call_event(
            session, runtime, cancelled, "call.cancelled", {"status": "cancelled"}
        )
