"""Calls on a worker: dispatching enqueued calls, placing them, holding answered calls, and
answering inbound ones. Every status change goes through ``lifecycle``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.calls.events import record_call_event
from callplane.calls.schemas import normalize_number
from callplane.calls.service import add_call
from callplane.engine import lifecycle
from callplane.engine.claim import claim_calls
from callplane.engine.conversation import CallContext, after_call, hold_conversation
from callplane.engine.lifecycle import CallRef
from callplane.engine.tasks import WorkerTask
from callplane.engine.worker import Engine
from callplane.kit import wakeups
from callplane.kit.tenancy import across_organizations
from callplane.models.agents import Agent
from callplane.models.base import Base, utcnow
from callplane.models.calls import Call
from callplane.models.external_calls import Recording
from callplane.models.phone_numbers import PhoneNumber
from callplane.observability import metrics
from callplane.observability.tracing import traced
from callplane.recordings.service import put_call_recording
from callplane.runtime import Runtime
from callplane.speech.answering import detect_answered_by
from callplane.telephony.base import (
    Connection,
    ConversationRunner,
    DialFailed,
    DialRequest,
    InboundOffer,
    InboundRouter,
)

log = logging.getLogger("callplane.engine.calls")

#: How long past the ring timeout a dial attempt may hang before the engine gives up on it.
DIAL_MARGIN_SECONDS = 5.0
#: Calls claimed per transaction.
CLAIM_BATCH = 200


# -- dispatch ------------------------------------------------------------------------------


async def dispatch(engine: Engine) -> bool:
    """Claim what this worker has room for and place those calls; True when more may wait."""
    if engine.draining:
        return False
    want = min(engine.concurrency - len(engine.calls), CLAIM_BATCH)
    if want <= 0:
        return False
    calls = await engine.transact(claim_calls, engine.worker_id, want)
    metrics.observe_claims(calls, utcnow())
    for call in calls:
        ref = CallRef(call.organization_id, call.id, engine.worker_id)
        engine.hold(ref, place_call(engine, call, ref))
    return len(calls) == want


async def _dispatch_forever(engine: Engine) -> None:
    await engine.repeat(
        dispatch, interval=engine.settings.worker_poll_seconds, wake_on=wakeups.CALLS
    )


DISPATCH = WorkerTask("dispatch", _dispatch_forever)


# -- one outbound call ---------------------------------------------------------------------


async def place_call(engine: Engine, call: Call, ref: CallRef) -> None:
    """dialing → in_progress, busy, no_answer or failed; then hold the conversation."""
    settings = engine.settings
    request = DialRequest(
        to_number=call.to_number or "",
        from_number=call.from_number,
        ring_timeout_seconds=settings.ring_timeout_seconds,
        call_ref=str(call.id),
    )
    try:
        connection = await asyncio.wait_for(
            traced("dial", engine.adapter.dial(request)),
            settings.ring_timeout_seconds + DIAL_MARGIN_SECONDS,
        )
    except DialFailed as failure:
        await engine.moves.apply(lifecycle.dial_failed(ref, failure.outcome, failure.reason))
        return
    except TimeoutError:
        await engine.moves.apply(lifecycle.dial_failed(ref, "no_answer", "ring timeout"))
        return
    except asyncio.CancelledError:
        await engine.moves.apply(lifecycle.dial_failed(ref, "failed", "the worker stopped"))
        raise
    except Exception as exc:
        log.exception("dial failed", extra={"call_id": str(call.id)})
        await engine.moves.apply(
            lifecycle.dial_failed(ref, "failed", f"telephony error ({type(exc).__name__})")
        )
        return
    answered_at = utcnow()
    answered_by = connection.answered_by
    if answered_by is None:
        # The network cannot tell: listen to the first seconds (what is heard is replayed to
        # the conversation, which must hear it too).
        answered_by, connection = await detect_answered_by(connection)
    started = await engine.moves.apply(lifecycle.answered(ref, answered_by, answered_at))
    if started is None:  # failed under us (lease lost) or gone: nobody may talk on it
        await connection.hangup()
        return
    await converse(engine, started, ref, connection)


async def converse(engine: Engine, call: Call, ref: CallRef, connection: Connection) -> None:
    """Hold the conversation of an answered call, then complete it (in_progress → completed)."""
    context = CallContext.from_call(call)
    reason = "the far end hung up"
    metrics.calls_in_progress.inc()
    # The maximum length counts from the answer: listening for who answered is part of the call.
    answered_for = (utcnow() - call.started_at).total_seconds() if call.started_at else 0.0
    try:
        await asyncio.wait_for(
            hold_conversation(context, connection, engine.services),
            max(0.0, engine.settings.max_call_seconds - answered_for),
        )
        if connection.ended_by != "remote":  # the agent hung up (end_call, apology)
            reason = "the agent hung up"
    except TimeoutError:
        reason = "maximum call length reached"
    except asyncio.CancelledError:
        reason = "the worker stopped"
        raise
    except Exception:
        log.exception("conversation failed", extra={"call_id": str(call.id)})
        reason = "the conversation failed"
    finally:
        metrics.calls_in_progress.dec()
        await _finish(engine, context, ref, connection, reason)


async def _finish(
    engine: Engine, context: CallContext, ref: CallRef, connection: Connection, reason: str
) -> None:
    with contextlib.suppress(Exception):
        await traced("hang-up", connection.hangup())
    ended_at = utcnow()
    stored: list[tuple[type[Base], dict[str, Any]]] = []
    try:
        recording = await connection.recording()
        if recording is not None and recording.duration_seconds > 0:
            # The network's own clock: the far end may have hung up a moment before the
            # conversation noticed (its last words were still being recognised).
            by_recording = context.started_at + timedelta(seconds=recording.duration_seconds)
            ended_at = min(ended_at, by_recording)
        if recording is not None and recording.data:
            row = await put_call_recording(
                engine.runtime,
                ref.organization_id,
                ref.call_id,
                recording.content_type,
                recording.data,
                context.started_at,
            )
            stored.append((Recording, row))
    except Exception:
        log.exception("storing the call's recording failed", extra={"call_id": str(ref.call_id)})
    # The recording's row is written with the completion (its audio is already in storage).
    completed = await engine.moves.apply(
        lifecycle.hung_up(
            ref, context.started_at, reason, context.transcript, ended_at, rows=stored
        )
    )
    if completed is None and stored:
        # The call was not ours any more (failed under us): its recording is still kept.
        await engine.transact(_insert_rows, stored)
    if completed is None:
        return
    try:
        await traced("analysis", after_call(context, engine.services))
    except Exception:
        log.exception("after-call work failed", extra={"call_id": str(ref.call_id)})


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
                select(PhoneNumber.organization_id, PhoneNumber.number, PhoneNumber.agent_id)
                .where(PhoneNumber.number.in_(sorted(numbers)))
                .order_by(PhoneNumber.created_at, PhoneNumber.id)
                .limit(1),
                "an inbound call names a number, not an organization: the number finds it",
            )
        )
    ).first()
    if found is None:
        return None
    organization_id, number, agent_id = found
    agent_uuid = None
    if agent_id is not None:
        agent_uuid = await session.scalar(
            select(Agent.uuid).where(Agent.organization_id == organization_id, Agent.id == agent_id)
        )
    now = utcnow()
    call = Call(
        organization_id=organization_id,
        id=uuid.uuid4(),
        simple_uuid=uuid.uuid4(),
        from_number=offer.from_number,
        to_number=number,
        status=lifecycle.INBOUND.target,
        direction="inbound",
        started_at=now,
        answered_by="human",
        agent_uuid=agent_uuid,
        worker_id=worker_id,
        lease_expires_at=now + timedelta(seconds=runtime.settings.worker_lease_seconds),
        event_sequence=1,
        params={},
        external_identifiers={},
        keyterms=[],
        analyzers=[],
        analysis_results=[],
        transcripts=[],
        transferred=False,
        created_at=now,
        updated_at=now,
    )
    await add_call(session, call, [])
    await record_call_event(
        session,
        runtime,
        call,
        lifecycle.INBOUND.event_type,
        {"status": call.status, "answered_by": "human", "direction": "inbound"},
    )
    return call


def inbound_router(engine: Engine) -> InboundRouter:
    """What the adapter asks for each incoming call: how to hold it, or None (refuse: 404)."""

    async def route(offer: InboundOffer) -> ConversationRunner | None:
        if engine.draining:
            return None
        call = await engine.transact(create_inbound_call, offer, engine.worker_id)
        if call is None:
            return None
        ref = CallRef(call.organization_id, call.id, engine.worker_id)

        async def hold(connection: Connection) -> None:
            # The adapter awaits this; the engine tracks it like its own calls (leases, shutdown).
            task = engine.hold(ref, converse(engine, call, ref, connection))
            await asyncio.shield(task)

        return hold

    return route
