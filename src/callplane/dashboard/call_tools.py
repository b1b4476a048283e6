"""The call page's tool uses and transfer, inline in the transcript (docs/tools.md).

A tool use is two transcript entries (the brain's ask, the tool's answer) and one ``tool.called``
event (name, duration, outcome). The k-th answer of a tool name is matched to the k-th event of
that name: both are written as each use finishes, so they come in the same order. Everything
here is plain data; the template escapes it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

TOOL_EVENT = "tool.called"
TRANSFER_EVENT = "call.transferred"


@dataclass(frozen=True)
class ToolAnswer:
    #: The result, indented when it is JSON.
    result: str
    outcome: str | None
    duration_seconds: float | None


@dataclass(frozen=True)
class TransferShown:
    destination: str | None
    mode: str | None
    at: datetime | None
    screen_pop_token: str | None
    #: ``handoff_metadata``, by provider.
    handoff: Mapping[str, Any]


def _readable(text: str) -> str:
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if not isinstance(value, dict | list):
        return text
    return json.dumps(value, indent=2, ensure_ascii=False)


def tool_answers(
    transcript: Sequence[Mapping[str, Any]], events: Sequence[Any]
) -> dict[int, ToolAnswer]:
    """Each ``tool`` entry's answer by its transcript index, with its event's outcome and
    duration (None for both when the call has no event for it)."""
    called: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for event in events:
        if event.type == TOOL_EVENT and isinstance(event.data, dict):
            called[str(event.data.get("name"))].append(event.data)
    taken: dict[str, int] = defaultdict(int)
    answers: dict[int, ToolAnswer] = {}
    for index, entry in enumerate(transcript):
        if entry.get("role") != "tool":
            continue
        name = str(entry.get("function_name"))
        mine = called.get(name, [])
        data = mine[taken[name]] if taken[name] < len(mine) else {}
        taken[name] += 1
        duration = data.get("duration_seconds")
        answers[index] = ToolAnswer(
            result=_readable(str(entry.get("text") or "")),
            outcome=str(data["outcome"]) if data.get("outcome") else None,
            duration_seconds=float(duration) if isinstance(duration, int | float) else None,
        )
    return answers


def _is_transfer_answer(entry: Mapping[str, Any]) -> bool:
    try:
        value = json.loads(str(entry.get("text") or ""))
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("transferred") is True


def transfer_of(
    call: Mapping[str, Any], transcript: Sequence[Mapping[str, Any]], events: Sequence[Any]
) -> tuple[TransferShown | None, int | None]:
    """The call's accepted transfer (None when it was not transferred) and the transcript index
    of the tool answer it follows from (None when no answer says so: it is then shown after
    the transcript)."""
    if not call.get("transferred"):
        return None, None
    recorded = next((e for e in reversed(events) if e.type == TRANSFER_EVENT), None)
    data = recorded.data if recorded is not None and isinstance(recorded.data, dict) else {}
    handoff = call.get("handoff_metadata")
    shown = TransferShown(
        destination=data.get("destination"),
        mode=data.get("mode"),
        at=recorded.at if recorded is not None else None,
        screen_pop_token=call.get("screen_pop_token") or data.get("screen_pop_token"),
        handoff=handoff if isinstance(handoff, dict) else {},
    )
    where = next(
        (
            index
            for index in range(len(transcript) - 1, -1, -1)
            if transcript[index].get("role") == "tool" and _is_transfer_answer(transcript[index])
        ),
        None,
    )
    return shown, where
