"""Where a call's redacted lines are in its recording (``privacy/tone.py`` covers them).

The transcript's redaction notes each redacted line's role and times on the call's clock
(``Redactor.said``). The recogniser on a live call keeps no word times (it is run without them,
for speed), so the whole line is covered: a caller's from when they began to speak until they
stopped, an agent's (it may read a value back) until its next line, or the end. On a network
whose recording keeps its own clock (the simulated one) the times are moved onto it first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from callplane.privacy.redaction import Redactor
from callplane.telephony.base import Recording

#: Channels of the call's recording (``telephony/recording.py``).
AGENT, CALLER = 0, 1


def redacted_stretches(
    redactor: Redactor, recording: Recording, transcript: Sequence[dict[str, Any]]
) -> list[tuple[int, float, float]]:
    """(channel, start, end) in the recording's seconds, one per redacted line."""
    duration = recording.duration_seconds
    moments: list[tuple[float, str | None]] = []
    for role, start, end in redactor.said:
        moments.append((start, role))
        if role == "user":
            moments.append((end if end is not None else duration, "caller_ended"))
    places = iter(recording.timeline(moments) if recording.timeline else [m for m, _ in moments])
    # The transcript is on the recording's clock by now (``recorded_clock``).
    agent_lines = sorted(
        float(entry["timestamp"])
        for entry in transcript
        if entry.get("role") == "assistant"
        and entry.get("text")
        and isinstance(entry.get("timestamp"), int | float)
    )
    stretches = []
    for role, _start, end in redactor.said:
        begins = next(places)
        if role == "user":
            ends = next(places) if end is not None else duration
            stretches.append((CALLER, begins, max(begins, ends)))
        else:
            later = [at for at in agent_lines if at > begins + 0.01]
            stretches.append((AGENT, begins, later[0] if later else duration))
    return stretches
