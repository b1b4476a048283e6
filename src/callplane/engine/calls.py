"""Calls on a worker: dispatching enqueued calls, placing them, holding answered calls, and
answering inbound ones. Every status change goes through ``lifecycle``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.agents.service import resolve_branch_head
from callplane.calls.answered import add_answered_call
from callplane.engine import lifecycle
from callplane.engine.answering import detect_answered_by
from callplane.engine.claim import claim_calls
from callplane.engine.conversation.session import CallContext, after_call, hold_conversation
from callplane.engine.lifecycle import CallRef
from callplane.engine.recorded_clock import restamp_transcript, restamp_turns
from callplane.engine.recording_redaction import covered_stretches
from callplane.engine.switchboard import Switchboard
from callplane.jobs import TaskContext, WorkerTask
from callplane.kit import wakeups
from callplane.kit.schemas import normalize_number
from callplane.kit.tenancy import across_organizations
from callplane.models.base import Base, utcnow
from callplane.models.calls import Call
from callplane.models.external_calls import Recording
from callplane.models.phone_numbers import PhoneNumber
from callplane.observability import metrics
from callplane.observability.tracing import traced
from callplane.privacy.tone import tone_wav
from callplane.recordings.service import put_call_recording
from callplane.runtime import Runtime
from callplane.telephony.base import (
    Connection,
    ConversationRunner,
    DialFailed,
    DialRequest,
    InboundOffer,
    InboundRouter,
    ScriptLine,
)

log = logging.getLogger("callplane.engine.calls")

#: How long past the ring timeout a dial attempt may hang before the engine gives up on it.
DIAL_MARGIN_SECONDS = 5.0
#: Calls claimed per transaction.
CLAIM_BATCH = 200


# -- dispatch ------------------------------------------------------------------------------


async def dispatch(board: Switchboard) -> bool:
    """Claim what this worker has room for and place those calls; True when more may wait."""
    if board.draining:
        return False
    want = min(board.concurrency - len(board.calls), CLAIM_BATCH)
    if want <= 0:
        return False
    calls = await board.jobs.transact(claim_calls, board.worker_id, want)
    metrics.observe_claims(calls, utcnow())
    for call in calls:
        ref = CallRef(call.organization_id, call.id, board.worker_id)
        board.hold(ref, place_call(board, call, ref))
    return len(calls) == want


def dispatch_task(board: Switchboard) -> WorkerTask:
    """Placing the enqueued calls this worker has room for, woken when calls are created."""

    async def step(_ctx: TaskContext) -> bool:
        return await dispatch(board)

    async def run(ctx: TaskContext) -> None:
        await ctx.repeat(step, interval=ctx.settings.worker_poll_seconds, wake_on=wakeups.CALLS)

    return WorkerTask("dispatch", run)


# -- one outbound call ---------------------------------------------------------------------


async def place_call(board: Switchboard, call: Call, ref: CallRef) -> None:
    """dialing → in_progress, busy, no_answer or failed; then hold the conversation."""
    settings = board.settings
    request = DialRequest(
        to_number=call.to_number or "",
        from_number=call.from_number,
        ring_timeout_seconds=settings.ring_timeout_seconds,
        call_ref=str(call.id),
        script=script_of(call.simulate),
    )
    try:
        connection = await asyncio.wait_for(
            traced("dial", board.adapter.dial(request)),
            settings.ring_timeout_seconds + DIAL_MARGIN_SECONDS,
        )
    except DialFailed as failure:
        await board.moves.apply(lifecycle.dial_failed(ref, failure.outcome, failure.reason))
        return
    except TimeoutError:
        await board.moves.apply(lifecycle.dial_failed(ref, "no_answer", "ring timeout"))
        return
    except asyncio.CancelledError:
        await board.moves.apply(lifecycle.dial_failed(ref, "failed", "the worker stopped"))
        raise
    except Exception as exc:
        log.exception("dial failed", extra={"call_id": str(call.id)})
        await board.moves.apply(
            lifecycle.dial_failed(ref, "failed", f"telephony error ({type(exc).__name__})")
        )
        return
    answered_at = utcnow()
    answered_by = connection.answered_by
    if answered_by is None:
        # The network cannot tell: listen to the first seconds (what is heard is replayed to
        # the conversation, which must hear it too).
        transcriber = board.services.providers.transcriber
        answered_by, connection = await detect_answered_by(connection, transcriber)
    started = await board.moves.apply(lifecycle.answered(ref, answered_by, answered_at))
    if started is None:  # failed under us (lease lost) or gone: nobody may talk on it
        await connection.hangup()
        return
    await converse(board, started, ref, connection)


async def converse(
    board: Switchboard,
    call: Call,
    ref: CallRef,
    connection: Connection,
    context: CallContext | None = None,
) -> None:
    """Hold the conversation of an answered call, then complete it (in_progress → completed).
    The turn loop ends it at the agent's maximum length (counted from the answer: listening
    for who answered is part of the call). ``context`` lets a caller watch the transcript as it
    grows (a web call's live view)."""
    context = context or CallContext.from_call(call)
    reason = "the far end hung up"
    metrics.calls_in_progress.inc()
    try:
        reason = await hold_conversation(context, connection, board.services)
        reason = connection.end_reason or reason  # the network knows better (media timeout)
    except asyncio.CancelledError:
        reason = "the worker stopped"
        raise
    except Exception:
        log.exception("conversation failed", extra={"call_id": str(call.id)})
        reason = "the conversation failed"
    finally:
        metrics.calls_in_progress.dec()
        await _finish(board, context, ref, connection, reason)


async def _finish(
    board: Switchboard, context: CallContext, ref: CallRef, connection: Connection, reason: str
) -> None:
    with contextlib.suppress(Exception):
        await traced("hang-up", connection.hangup())
    ended_at = utcnow()
    stored: list[tuple[type[Base], dict[str, Any]]] = []
    try:
        recording = await connection.recording()
        if recording is not None and recording.timeline is not None:
            # The recording is the call's clock (the simulated network's text takes no time).
            restamp_transcript(context.transcript, recording.timeline)
            await board.jobs.transact(restamp_turns, ref, recording.timeline)
            ended_at = context.started_at + timedelta(seconds=recording.duration_seconds)
        elif recording is not None and recording.duration_seconds > 0:
            # The network's own clock: the far end may have hung up a moment before the
            # conversation noticed (its last words were still being recognised).
            by_recording = context.started_at + timedelta(seconds=recording.duration_seconds)
            ended_at = min(ended_at, by_recording)
        keep = context.spec is None or context.spec.store_recordings
        if recording is not None and recording.data and keep:
            redactor = context.redactor
            data = recording.data
            if redactor is not None and redactor.recordings and redactor.said:
                language = context.spec.language if context.spec is not None else "en"
                stretches = await covered_stretches(
                    redactor, recording, context.transcript, board.settings, language
                )
                data = await asyncio.to_thread(tone_wav, data, stretches)
            row = await put_call_recording(
                board.jobs.runtime,
                ref.organization_id,
                ref.call_id,
                recording.content_type,
                data,
                context.started_at,
            )
            stored.append((Recording, row))
    except Exception:
        log.exception("storing the call's recording failed", extra={"call_id": str(ref.call_id)})
    # The recording's row is written with the completion (its audio is already in storage).
    completed = await board.moves.apply(
        lifecycle.hung_up(
            ref,
            context.started_at,
            reason,
            context.transcript,
            ended_at,
            rows=stored,
            redactions=context.redactor.summary() if context.redactor is not None else None,
        )
    )
    if completed is None and stored:
        # The call was not ours any more (failed under us): its recording is still kept.
        await board.jobs.transact(_insert_rows, stored)
    if completed is None:
        return
    try:
        await traced("analysis", after_call(context, board.services))
    except Exception:
        log.exception("after-call work failed", extra={"call_id": str(ref.call_id)})


def script_of(simulate: dict[str, Any] | None) -> tuple[ScriptLine, ...] | None:
    """The call's own simulated person (``POST /calls`` ``simulate``), as the network takes it."""
    if not simulate:
        return None
    return tuple(
        ScriptLine(str(line["say"]), int(line.get("after_ms", 0)) / 1000)
        for line in simulate.get("script") or ()
    )


async def _insert_rows(
    session: AsyncSession, _runtime: Runtime, rows: list[tuple[type[Base], dict[str, Any]]]
) -> None:
    for model, row in rows:
        session.add(model(**row))


# -- inbound calls -------------------------------------------------------------------------


async def create_inbound_call(
    session: AsyncSession, runtime: Runtime, offer: InboundOffer, worker_id: str
) -> Call | None:
    """The call for an INVITE to one of an organization's numbers (created answered), or None
    when no organization has that number."""
    numbers = {offer.to_number}
    with contextlib.suppress(ValueError):
        numbers.add(normalize_number(offer.to_number))
    found = (
        await session.execute(
            across_organizations(
                select(
                    PhoneNumber.organization_id,
                    PhoneNumber.number,
                    PhoneNumber.agent_id,
                    PhoneNumber.agent_branch_name,
                )
                .where(PhoneNumber.number.in_(sorted(numbers)))
                .order_by(PhoneNumber.created_at, PhoneNumber.id)
                .limit(1),
                "an inbound call names a number, not an organization: the number finds it",
            )
        )
    ).first()
    if found is None:
        return None
    organization_id, number, agent_id, branch_name = found
    # The head of the number's branch at this moment is the commit the call runs (docs/agents.md).
    agent = (
        await resolve_branch_head(
            session, organization_id, agent_id, branch_name, other_party=offer.from_number
        )
        if agent_id is not None
        else None
    )
    return await add_answered_call(
        session,
        runtime,
        organization_id=organization_id,
        direction="inbound",
        worker_id=worker_id,
        agent=agent,
        from_number=offer.from_number,
        to_number=number,
    )


def inbound_router(board: Switchboard) -> InboundRouter:
    """What the adapter asks for each incoming call: how to hold it, or None (refuse: 404)."""

    async def route(offer: InboundOffer) -> ConversationRunner | None:
        if board.draining:
            return None
        call = await board.jobs.transact(create_inbound_call, offer, board.worker_id)
        if call is None:
            return None
        ref = CallRef(call.organization_id, call.id, board.worker_id)

        async def hold(connection: Connection) -> None:
            # The adapter awaits this; the engine tracks it like its own calls (leases, shutdown).
            task = board.hold(ref, converse(board, call, ref, connection))
            await asyncio.shield(task)

        return hold

    return route
