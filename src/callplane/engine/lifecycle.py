"""Every move a call can make (DESIGN §10), and the statements that make them.

    from         event                                          to           webhook event
    -----------  ---------------------------------------------  -----------  ----------------
    enqueued     a worker claims it (claim.py)                  dialing      call.dialing
    enqueued     POST /calls/{uuid}/cancel (calls.service)      cancelled    call.cancelled
    dialing      answered                                       in_progress  call.in_progress
    dialing      486/600 busy                                   busy         call.ended
    dialing      ring timeout, 408, 480                         no_answer    call.ended
    dialing      other failure                                  failed       call.ended
    in_progress  either side hangs up, or max length            completed    call.ended
    dialing,     the worker holding it is gone (leases.py)      failed       call.ended
    in_progress
    (none)       an INVITE to one of the organization's         in_progress  call.in_progress
                 numbers: created answered (calls.py)

Each move is one conditional UPDATE: it applies only when the call is still in a ``from``
status and, for the engine's moves, still held by the worker making it. A worker that lost its
call (its lease ran out and the call was failed) therefore cannot move it any more. The same
UPDATE increments the call's event sequence; the event row and the webhook event are written in
the same transaction (``calls.events``).
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, update
from sqlalchemy.ext.asyncio import AsyncSession

from callplane import wakeups
from callplane.calls.events import record_call_event
from callplane.models.base import utcnow
from callplane.models.calls import Call
from callplane.runtime import Runtime
from callplane.telephony.base import AnsweredBy, DialOutcome

ACTIVE = ("dialing", "in_progress")
TERMINAL = ("completed", "failed", "no_answer", "busy", "cancelled")


@dataclass(frozen=True)
class Move:
    source: tuple[str, ...]
    event: str
    target: str
    event_type: str


CLAIMED = Move(("enqueued",), "a worker claims it", "dialing", "call.dialing")
CANCELLED = Move(("enqueued",), "cancel", "cancelled", "call.cancelled")
ANSWERED = Move(("dialing",), "answered", "in_progress", "call.in_progress")
BUSY = Move(("dialing",), "486/600 busy", "busy", "call.ended")
NO_ANSWER = Move(("dialing",), "ring timeout, 408, 480", "no_answer", "call.ended")
DIAL_FAILED = Move(("dialing",), "other failure", "failed", "call.ended")
HUNG_UP = Move(("in_progress",), "either side hangs up, or max length", "completed", "call.ended")
LEASE_EXPIRED = Move(ACTIVE, "the worker holding it is gone", "failed", "call.ended")
INBOUND = Move(
    (), "an INVITE to one of the organization's numbers", "in_progress", "call.in_progress"
)

LIFECYCLE = (CLAIMED, CANCELLED, ANSWERED, BUSY, NO_ANSWER, DIAL_FAILED, HUNG_UP, LEASE_EXPIRED)

#: The move for each way a dial attempt fails (the adapter's ``DialFailed.outcome``).
DIAL_OUTCOMES: dict[DialOutcome, Move] = {
    "busy": BUSY,
    "no_answer": NO_ANSWER,
    "failed": DIAL_FAILED,
}


@dataclass(frozen=True)
class CallRef:
    """A call as a worker holds it."""

    organization_id: int
    call_id: uuid.UUID
    worker_id: str


def whole_seconds(start: datetime | None, end: datetime) -> int:
    if start is None:
        return 0
    return max(0, math.floor((end - start).total_seconds()))


async def move(
    session: AsyncSession,
    runtime: Runtime,
    step: Move,
    ref: CallRef,
    values: dict[str, Any],
    data: dict[str, Any],
    *,
    also: tuple[ColumnElement[bool], ...] = (),
) -> Call | None:
    """Apply ``step`` to the call if it is still where ``step`` starts and held by ``ref``'s
    worker; record its event. None when it was not (someone else moved the call)."""
    now = utcnow()
    call = await session.scalar(
        update(Call)
        .where(
            Call.organization_id == ref.organization_id,
            Call.id == ref.call_id,
            Call.status.in_(step.source),
            Call.worker_id == ref.worker_id,
            *also,
        )
        .values(
            status=step.target,
            event_sequence=Call.event_sequence + 1,
            updated_at=now,
            **values,
        )
        .returning(Call)
        .execution_options(synchronize_session=False)
    )
    if call is None:
        return None
    await record_call_event(
        session, runtime, call, step.event_type, {"status": call.status, **data}
    )
    if step.target in TERMINAL:
        # A slot of the organization is free: workers may dial its next queued call.
        await wakeups.announce(session, wakeups.CALLS)
    return call


async def answered(
    session: AsyncSession,
    runtime: Runtime,
    ref: CallRef,
    answered_by: AnsweredBy,
    answered_at: datetime,
) -> Call | None:
    return await move(
        session,
        runtime,
        ANSWERED,
        ref,
        {"started_at": answered_at, "answered_by": answered_by},
        {"answered_by": answered_by},
    )


async def dial_failed(
    session: AsyncSession, runtime: Runtime, ref: CallRef, outcome: DialOutcome, reason: str
) -> Call | None:
    now = utcnow()
    return await move(
        session,
        runtime,
        DIAL_OUTCOMES[outcome],
        ref,
        {"ended_at": now, "duration": 0},
        {"reason": reason, "duration": 0},
    )


async def hung_up(
    session: AsyncSession,
    runtime: Runtime,
    ref: CallRef,
    started_at: datetime | None,
    reason: str,
    transcript: list[dict[str, Any]],
    ended_at: datetime | None = None,
) -> Call | None:
    """``ended_at``: when the line went down, if the network knows better than now."""
    now = ended_at or utcnow()
    duration = whole_seconds(started_at, now)
    return await move(
        session,
        runtime,
        HUNG_UP,
        ref,
        {"ended_at": now, "duration": duration, "transcripts": transcript},
        {"reason": reason, "duration": duration},
    )


async def lease_expired(
    session: AsyncSession, runtime: Runtime, ref: CallRef, started_at: datetime | None
) -> Call | None:
    """Fail a call whose worker stopped renewing its lease (checked again in the UPDATE, so a
    renewal that just happened wins)."""
    now = utcnow()
    duration = whole_seconds(started_at, now)
    return await move(
        session,
        runtime,
        LEASE_EXPIRED,
        ref,
        {"ended_at": now, "duration": duration},
        {"reason": "the worker holding the call stopped", "duration": duration},
        also=(Call.lease_expires_at < now,),
    )
