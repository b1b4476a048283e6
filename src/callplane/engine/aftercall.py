"""What the agent writes on a call besides its transcript: the summary and analysis results
after it ends (then ``call.analyzed``, docs/engine-core.md), and its own events while it runs.

Both are single ``UPDATE … RETURNING`` statements that also take the call's next event number,
as every move of a call does (``calls.events``); the agent's own events (``agent.*``) are for
``GET /calls/{uuid}/events`` and logs, not webhooks (docs/api-contract.md#webhooks lists the webhook
types).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from callplane.brain import Brain, run_analyzers, summarize
from callplane.engine.lifecycle import MoveRequest, analyzed, apply_moves
from callplane.kit.tenancy import update_owned
from callplane.models.base import utcnow
from callplane.models.calls import Call, CallEvent
from callplane.privacy.redaction import Redactor
from callplane.runtime import Runtime

#: Makes one move of a call (the worker's ``GroupCommit.apply``): the call as moved, or None.
ApplyMove = Callable[[MoveRequest], Awaitable[Call | None]]


async def analyze_call(
    runtime: Runtime,
    brain: Brain | None,
    organization_id: int,
    call_id: uuid.UUID,
    transcript: Sequence[dict[str, Any]],
    analyzers: Sequence[Mapping[str, Any]],
    latencies: Sequence[float] = (),
    apply_move: ApplyMove | None = None,
    summary_prompt: str | None = None,
    redactor: Redactor | None = None,
) -> None:
    """Summary and analyzers (the slow part, outside any transaction), then one write: through
    the worker's group commit (``apply_move``) when there is one. They read the transcript,
    redacted already; what they write is redacted too (the brain may know a value from the
    prompt's variables)."""
    summary = await summarize(brain, transcript, summary_prompt)
    results = await run_analyzers(brain, analyzers, transcript) if analyzers else []
    if redactor is not None:
        if summary.text:
            summary = replace(summary, text=redactor.text(summary.text, count=False))
        results = redactor.value(results, count=False)
    data: dict[str, Any] = {
        "summary_by": "brain" if brain is not None and summary.error is None else "extractive",
        "analysis_errors": sum(1 for r in results if r.get("error")),
        "response_latency_ms": [round(x * 1000) for x in latencies],
    }
    if summary.error:
        data["summary_error"] = summary.error
    request = analyzed(organization_id, call_id, summary.text, results, data)
    if apply_move is not None:
        await apply_move(request)
        return
    async with runtime.db.session(write=True) as session:
        await apply_moves(session, runtime, [request])
        await session.commit()


async def record_agent_event(
    runtime: Runtime, organization_id: int, call_id: uuid.UUID, type_: str, data: dict[str, Any]
) -> None:
    async with runtime.db.session(write=True) as session:
        row = (
            await session.execute(
                update_owned(Call, organization_id)
                .where(Call.id == call_id)
                .values(event_sequence=Call.event_sequence + 1)
                .returning(Call.event_sequence, Call.campaign_id)
                .execution_options(synchronize_session=False)
            )
        ).first()
        if row is None:
            return
        sequence, campaign_id = row
        if campaign_id is not None:  # an attempt's every event names its campaign
            data = {**data, "campaign_id": str(campaign_id)}
        session.add(
            CallEvent(
                organization_id=organization_id,
                call_uuid=call_id,
                sequence=sequence,
                type=type_,
                at=utcnow(),
                data=data,
            )
        )
        await session.commit()
