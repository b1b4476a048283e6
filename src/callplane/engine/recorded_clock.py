"""A call whose recording keeps its own clock (the simulated network: text takes no time,
speech does): what the call reports is moved onto the recording's clock when it ends, so the
transcript's times, the turns' places and the call's length are positions in its recording.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.engine.lifecycle import CallRef
from callplane.kit.tenancy import select_owned
from callplane.models.calls import CallEvent
from callplane.observability import turns
from callplane.runtime import Runtime

#: (seconds since answered, the entry's role) of each moment, in call order -> seconds into the
#: recording of each.
Timeline = Callable[[Sequence[tuple[float, str | None]]], list[float]]


def restamp_transcript(transcript: list[dict[str, Any]], timeline: Timeline) -> None:
    """Each entry at its line's place in the recording; a tool's entries after the agent's line
    they came with."""
    moments = [
        (
            float(entry.get("timestamp") or 0),
            None if entry.get("function_name") else entry.get("role"),
        )
        for entry in transcript
    ]
    # The entries keep the order the conversation gave them (what the brain was told, in that
    # order); a moment the recording places earlier than the entry before it (two sides racing
    # within a millisecond) is placed with that entry instead.
    latest = 0.0
    for entry, place in zip(transcript, timeline(moments), strict=True):
        latest = max(latest, place)
        entry["timestamp"] = latest


async def restamp_turns(
    session: AsyncSession, _runtime: Runtime, ref: CallRef, timeline: Timeline
) -> None:
    """The call's ``agent.turn_latency`` events: the caller's line ends and the agent's begins
    where the recording has them (the measured milliseconds stay as measured)."""
    rows = await session.scalars(
        select_owned(CallEvent, ref.organization_id)
        .where(CallEvent.call_uuid == ref.call_id, CallEvent.type == turns.EVENT_TYPE)
        .order_by(CallEvent.sequence)
    )
    events = [row for row in rows if isinstance(row.data, dict)]
    moments: list[tuple[float, str | None]] = []
    for row in events:
        moments.append((_seconds(row.data.get("caller_ended_at")), "caller_ended"))
        moments.append((_seconds(row.data.get("agent_started_at")), "assistant"))
    places = iter(timeline(moments))
    for row in events:
        ended, started = next(places), next(places)
        # A reply is never heard before the words it answers have ended.
        started = max(started, ended)
        row.data = {**row.data, "caller_ended_at": ended, "agent_started_at": started}


def _seconds(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0
