"""A test's expectations against what happened in one run of it: each failure is one sentence
saying what was expected and what the agent said or did instead."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import regex

#: Seconds one pattern may spend over the agent's lines before it counts as a failure.
PATTERN_SECONDS = 0.25


def agent_lines(transcript: Sequence[Mapping[str, Any]]) -> list[str]:
    return [
        str(e["text"])
        for e in transcript
        if e.get("role") == "assistant" and not e.get("function_name") and e.get("text")
    ]


def tool_calls(transcript: Sequence[Mapping[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (str(e["function_name"]), dict(e.get("arguments") or {}))
        for e in transcript
        if e.get("role") == "assistant" and e.get("function_name")
    ]


def _contains(whole: object, part: object) -> bool:
    """``part`` is a subset of ``whole``: objects by key, recursively; anything else equal."""
    if isinstance(part, Mapping) and isinstance(whole, Mapping):
        return all(k in whole and _contains(whole[k], v) for k, v in part.items())
    return whole == part


def _show(calls: Sequence[tuple[str, dict[str, Any]]]) -> str:
    shown = ", ".join(f"{n}({orjson.dumps(a).decode()})" for n, a in calls)
    return shown or "no tool"


def _search(pattern: str, text: str) -> bool | None:
    """Whether the pattern matches; None when it ran out of time."""
    try:
        return regex.search(pattern, text, timeout=PATTERN_SECONDS) is not None
    except TimeoutError:
        return None


def check(
    expect: Mapping[str, Any],
    transcript: Sequence[Mapping[str, Any]],
    *,
    ended: bool,
    reply_ms: Sequence[int] = (),
    heard: Sequence[str] | None = None,
) -> list[str]:
    """``heard``: audio mode's agent lines as recognised, checked instead of the text."""
    failures: list[str] = []
    calls = tool_calls(transcript)
    lines = list(heard) if heard is not None else agent_lines(transcript)
    said = "\n".join(lines)
    quoted = "said " + (" / ".join(f'"{line}"' for line in lines) or "nothing")
    if heard is not None:
        quoted = "was heard saying " + quoted.removeprefix("said ")
    position = 0
    for index, wanted in enumerate(expect.get("tool_calls", [])):
        name, arguments = wanted["name"], wanted.get("arguments", {})
        found = next(
            (
                n
                for n in range(position, len(calls))
                if calls[n][0] == name and _contains(calls[n][1], arguments)
            ),
            None,
        )
        if found is None:
            failures.append(
                f"expect.tool_calls.{index}: expected {_show([(name, arguments)])} "
                f"(arguments a subset, in order), the agent called {_show(calls)}"
            )
            break
        position = found + 1
    for name in expect.get("not_tool_calls", []):
        used = [c for c in calls if c[0] == name]
        if used:
            failures.append(
                f"expect.not_tool_calls: {name} was not to be called, it was: {_show(used)}"
            )
    for key, wanted_match, verb in (("said", True, "to say"), ("not_said", False, "never to say")):
        for index, pattern in enumerate(expect.get(key, [])):
            matched = _search(pattern, said)
            where = f"expect.{key}.{index}: /{pattern}/"
            if matched is None:
                failures.append(f"{where} took too long to match (a pattern that backtracks)")
            elif matched != wanted_match:
                failures.append(f"{where}: expected the agent {verb} it, it {quoted}")
    names = {c[0] for c in calls}
    outcomes = {
        "ended": ended,
        "transferred": "transfer_call" in names,
        "opted_out": "opt_out" in names,
    }
    for key, happened in outcomes.items():
        wanted_outcome = expect.get(key)
        if wanted_outcome is not None and wanted_outcome != happened:
            expected, was = str(wanted_outcome).lower(), str(happened).lower()
            failures.append(f"expect.{key}: expected {expected}, it was {was}")
    limit = expect.get("max_reply_ms")
    if limit is not None:
        slow = [ms for ms in reply_ms if ms > limit]
        if slow:
            took = ", ".join(map(str, reply_ms))
            failures.append(
                f"expect.max_reply_ms: every reply within {limit} ms, replies took {took} ms"
            )
    return failures
