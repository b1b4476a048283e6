"""Every move a call can make (docs/engine-core.md), and the statements that make them.

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

A worker does not commit each move alone: ``apply_moves`` takes the moves of many calls waiting
at the same moment and makes them in one transaction (the group commit of ``batching.py``), one
UPDATE per kind of move with each call's own values, every condition above kept per call.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, case, insert, literal, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.calls.events import NewCallEvent, record_call_events
from callplane.kit import wakeups
from callplane.kit.tenancy import across_organizations
from callplane.models.base import Base, utcnow
from callplane.models.calls import ACTIVE_STATUSES, TERMINAL_STATUSES, Call
from callplane.observability import metrics
from callplane.runtime import Runtime
from callplane.telephony.base import AnsweredBy, DialOutcome

ACTIVE = ACTIVE_STATUSES
TERMINAL = TERMINAL_STATUSES


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
    # Rounded, not truncated: a 5 s call whose end is stamped a few ms short of 5 s is 5 s long.
    return max(0, math.floor((end - start).total_seconds() + 0.5))


@dataclass
class MoveRequest:
    """One move for ``apply_moves``: ``step`` applied to ``ref``'s call with ``values`` (columns
    set with the status), ``data`` in its event; ``rows`` (model, values) are inserted in the same
    transaction when the move applies (the recording of a completed call)."""

    step: Move
    ref: CallRef
    values: dict[str, Any]
    data: dict[str, Any]
    #: The move requires the call to be held by ``ref.worker_id`` (every move of the engine's;
    #: not ``ANALYZED``, written after the call was completed).
    held: bool = True
    #: The move applies only if the call's lease has run out (the reaper).
    lease_expired: bool = False
    rows: list[tuple[type[Base], dict[str, Any]]] = field(default_factory=list)


#: Not a status change: the after-call work is written on the call (``aftercall.py``).
ANALYZED = Move((), "the summary and analysis results are written", "", "call.analyzed")


async def move(
    session: AsyncSession,
    runtime: Runtime,
    step: Move,
    ref: CallRef,
    values: dict[str, Any],
    data: dict[str, Any],
    *,
    lease_expired: bool = False,
) -> Call | None:
    """Apply ``step`` to the call if it is still where ``step`` starts and held by ``ref``'s
    worker; record its event. None when it was not (someone else moved the call)."""
    request = MoveRequest(step, ref, values, data, lease_expired=lease_expired)
    [call] = await apply_moves(session, runtime, [request])
    return call


async def apply_moves(
    session: AsyncSession, runtime: Runtime, requests: Sequence[MoveRequest]
) -> list[Call | None]:
    """Apply many moves in the caller's transaction (the engine's group commit): one UPDATE per
    kind of move, whatever the number of calls; then their events in one go. Each move keeps
    its own conditions (status, worker, lease), so the result is what applying them one by one
    would give; the result per request is the call as moved, or None when it did not apply."""
    now = utcnow()
    groups: dict[tuple[Any, ...], list[MoveRequest]] = {}
    keys: list[tuple[Any, ...]] = []
    for request in requests:
        worker = request.ref.worker_id if request.held or request.lease_expired else None
        key = (request.step, worker, request.lease_expired, tuple(sorted(request.values)))
        groups.setdefault(key, []).append(request)
        keys.append(key)
    # Per kind of move: a call two moves of one batch name (a worker's own move and the lease
    # reaper's) is moved by the UPDATE whose conditions it meets, and only that move counts
    # as made, with the event number that UPDATE gave it.
    moved: dict[tuple[tuple[Any, ...], int, uuid.UUID], tuple[Call, int]] = {}
    for (step, worker, expired, names), group in groups.items():
        conditions: list[ColumnElement[bool]] = [
            tuple_(Call.organization_id, Call.id).in_(
                [(r.ref.organization_id, r.ref.call_id) for r in group]
            )
        ]
        if step.source:
            conditions.append(Call.status.in_(step.source))
        if worker is not None:
            conditions.append(Call.worker_id == worker)
        if expired:
            conditions.append(Call.lease_expires_at < now)
        values: dict[str, Any] = {
            "event_sequence": Call.event_sequence + 1,
            "updated_at": now,
        }
        if step.target:
            values["status"] = step.target
        for name in names:
            values[name] = _per_call(name, group)
        statement = across_organizations(
            update(Call)
            .where(*conditions)
            .values(**values)
            .returning(Call)
            .execution_options(synchronize_session=False),
            "the engine moves a batch of calls, each named by (organization, id)",
        )
        group_key = (step, worker, expired, names)
        for moved_call in await session.scalars(statement):
            at = (group_key, moved_call.organization_id, moved_call.id)
            moved[at] = (moved_call, moved_call.event_sequence)
    made = [
        moved.get((key, r.ref.organization_id, r.ref.call_id))
        for key, r in zip(keys, requests, strict=True)
    ]
    results = [m[0] if m is not None else None for m in made]
    events: list[NewCallEvent] = []
    inserts: dict[type[Base], list[dict[str, Any]]] = {}
    for request, move in zip(requests, made, strict=True):
        if move is None:
            continue
        call, sequence = move
        data = {"status": call.status, **request.data}
        events.append(NewCallEvent(call, request.step.event_type, data, sequence))
        for model, row in request.rows:
            inserts.setdefault(model, []).append(row)
    for model, rows in inserts.items():
        await session.execute(insert(model), rows)
    await record_call_events(session, runtime, events)
    metrics.count_moves([(r.step.target, r.lease_expired) for r in requests], results)
    if any(
        c is not None and r.step.target in TERMINAL for r, c in zip(requests, results, strict=True)
    ):
        # A slot of the organization is free: workers may dial its next queued call.
        await wakeups.announce(session, wakeups.CALLS)
    return results


def _per_call(name: str, group: Sequence[MoveRequest]) -> Any:
    """The value of column ``name`` for each call of the group: one value when they agree, else
    ``CASE id WHEN ... THEN ...`` (one UPDATE still sets each call its own)."""
    first = group[0].values[name]
    if all(r.values[name] == first for r in group[1:]):
        return first
    column = Call.__table__.c[name]
    return case(
        *((Call.id == r.ref.call_id, literal(r.values[name], column.type)) for r in group),
        else_=column,
    )


def answered(ref: CallRef, answered_by: AnsweredBy, answered_at: datetime) -> MoveRequest:
    return MoveRequest(
        ANSWERED,
        ref,
        {"started_at": answered_at, "answered_by": answered_by},
        {"answered_by": answered_by},
    )


def dial_failed(ref: CallRef, outcome: DialOutcome, reason: str) -> MoveRequest:
    now = utcnow()
    return MoveRequest(
        DIAL_OUTCOMES[outcome],
        ref,
        {"ended_at": now, "duration": 0},
        {"reason": reason, "duration": 0},
    )


def hung_up(
    ref: CallRef,
    started_at: datetime | None,
    reason: str,
    transcript: list[dict[str, Any]],
    ended_at: datetime | None = None,
    rows: list[tuple[type[Base], dict[str, Any]]] | None = None,
    redactions: dict[str, int] | None = None,
) -> MoveRequest:
    """``ended_at``: when the line went down, if the network knows better than now; ``rows``:
    written with the completion (the call's recording); ``redactions``: what the agent's
    redaction replaced, by entity."""
    now = ended_at or utcnow()
    duration = whole_seconds(started_at, now)
    values: dict[str, Any] = {"ended_at": now, "duration": duration, "transcripts": transcript}
    if redactions is not None:
        values["redactions"] = redactions
    return MoveRequest(
        HUNG_UP,
        ref,
        values,
        {"reason": reason, "duration": duration},
        rows=rows or [],
    )


def lease_expired(ref: CallRef, started_at: datetime | None) -> MoveRequest:
    """Fail a call whose worker stopped renewing its lease (checked again in the UPDATE, so a
    renewal that just happened wins)."""
    now = utcnow()
    duration = whole_seconds(started_at, now)
    return MoveRequest(
        LEASE_EXPIRED,
        ref,
        {"ended_at": now, "duration": duration},
        {"reason": "the worker holding the call stopped", "duration": duration},
        lease_expired=True,
    )


def analyzed(
    organization_id: int,
    call_id: uuid.UUID,
    summary: str | None,
    results: list[Any],
    data: dict[str, Any],
) -> MoveRequest:
    """The summary and analysis results of a completed call, and ``call.analyzed``."""
    return MoveRequest(
        ANALYZED,
        CallRef(organization_id, call_id, ""),
        {"summary": summary, "analysis_results": results},
        data,
        held=False,
    )
