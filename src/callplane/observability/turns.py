"""One turn's latency, from the caller's last frame to the agent's first audio, cut in phases:

    end_of_turn   caller's last frame (``CallerSaid.ended_at``) -> the listener declares the
                  turn over (``CallerSaid.declared_at``: the silence that ends a turn)
    recognition   turn over -> its text reaches the turn loop (speech recognition)
    first_token   text known -> the brain's first token
    first_audio   first token -> the first audio of the reply is queued (sentence + synthesis)

All are ``time.monotonic()`` readings of the worker. The call's event ``agent.turn_latency``
also places the turn on the recording's clock: ``caller_ended_at`` and ``agent_started_at``
are seconds since the call was answered, the clock of the transcript's ``timestamp`` and of the
recording (which starts at the answer), so a listener hears the gap where the event says.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from callplane.observability import tracing
from callplane.observability.metrics import turn_latency

EVENT_TYPE = "agent.turn_latency"


@dataclass
class TurnTiming:
    caller_ended_at: float
    declared_at: float
    recognised_at: float
    first_token_at: float | None = None


def heard(event: Any) -> TurnTiming:
    """The turn the loop just received (a ``CallerSaid``)."""
    now = time.monotonic()
    declared = getattr(event, "declared_at", None) or event.ended_at
    return TurnTiming(event.ended_at, min(declared, now), now)


def token(timing: TurnTiming | None) -> None:
    """The brain's text began (call on every delta: only the first counts)."""
    if timing is not None and timing.first_token_at is None:
        timing.first_token_at = time.monotonic()


def breakdown(timing: TurnTiming, first_audio_at: float) -> list[tuple[str, float, float]]:
    """The phases as (name, start, end), consecutive; a reply without text (only tools) counts
    its first token at its first audio."""
    token_at = timing.first_token_at or first_audio_at
    marks = [
        timing.caller_ended_at,
        max(timing.caller_ended_at, timing.declared_at),
        timing.recognised_at,
        token_at,
        first_audio_at,
    ]
    for i in range(1, len(marks)):
        marks[i] = max(marks[i], marks[i - 1])
    names = ("end_of_turn", "recognition", "first_token", "first_audio")
    return [(name, marks[i], marks[i + 1]) for i, name in enumerate(names)]


async def report(
    timing: TurnTiming | None,
    first_audio_at: float | None,
    elapsed: Callable[[], float],
    write: Callable[[str, dict[str, Any]], Awaitable[None]],
) -> None:
    """Record a finished turn: the histograms, the trace, and the call's event. ``elapsed``:
    seconds since the answer now (``TranscriptLog.elapsed``); ``write``: the loop's report."""
    if timing is None or first_audio_at is None:
        return
    phases = breakdown(timing, first_audio_at)
    data: dict[str, Any] = {}
    for name, started, ended in phases:
        turn_latency.labels(name).observe(ended - started)
        data[f"{name}_ms"] = round((ended - started) * 1000)
    total = first_audio_at - timing.caller_ended_at
    turn_latency.labels("total").observe(max(0.0, total))
    data["total_ms"] = round(max(0.0, total) * 1000)
    now, since_answer = time.monotonic(), elapsed()
    data["caller_ended_at"] = round(max(0.0, since_answer - (now - timing.caller_ended_at)), 3)
    data["agent_started_at"] = round(max(0.0, since_answer - (now - first_audio_at)), 3)
    tracing.record_turn(phases)
    with contextlib.suppress(Exception):  # a lost measurement never disturbs the call
        await write(EVENT_TYPE, data)


def by_transcript_line(
    transcript: list[dict[str, Any]], latencies: list[dict[str, Any]]
) -> dict[int, dict[str, Any]]:
    """Each turn's measurement keyed by the index of the agent's line it led to: the line whose
    ``timestamp`` is the turn's ``agent_started_at`` (the same clock, rounded alike)."""
    lines = [
        (i, entry.get("timestamp"))
        for i, entry in enumerate(transcript)
        if entry.get("role") == "assistant" and entry.get("text")
    ]
    found: dict[int, dict[str, Any]] = {}
    for latency in latencies:
        at = latency.get("agent_started_at")
        if not isinstance(at, int | float):
            continue
        close = [(abs(stamp - at), i) for i, stamp in lines if isinstance(stamp, int | float)]
        if close and min(close)[0] <= 0.05:
            found[min(close)[1]] = latency
    return found
