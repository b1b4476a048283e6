"""The brain in the other chairs of a test: the judge of its criteria and the caller persona.

Both use CALLPLANE_JUDGE_MODEL (the brain's model when unset) on the brain's server. A judge
must answer ``{"passed": bool, "reason": str}``; anything else is ``UnreadableVerdict``, which
puts the whole run in ``error`` with the answer shown: a test must never pass on a verdict
nobody could read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from callplane.brain.base import Brain
from callplane.settings import Settings

JUDGE_INSTRUCTIONS = (
    "You judge one conversation between a phone agent and a caller against one criterion. "
    'Answer with JSON only: {"passed": true or false, "reason": "one sentence"}.'
)
CALLER_INSTRUCTIONS = (
    "You are the caller on a phone call with an agent, testing it. Stay in character. "
    "Say only your next line, nothing else. When your goal is met or the call is over, "
    "answer exactly [hang up]."
)
HANG_UP = "[hang up]"


class UnreadableVerdict(Exception):
    """The judge's answer is not a verdict; the message quotes it."""


def judge_model(settings: Settings) -> str | None:
    return settings.judge_model or settings.llm_model


def _as_text(transcript: Sequence[Mapping[str, Any]]) -> str:
    lines = []
    for entry in transcript:
        if entry.get("function_name"):
            if entry.get("role") == "assistant":
                arguments = orjson.dumps(entry.get("arguments") or {}).decode()
                lines.append(f"[agent used {entry['function_name']}({arguments})]")
        elif entry.get("role") in ("user", "assistant") and entry.get("text"):
            who = "Agent" if entry["role"] == "assistant" else "Caller"
            lines.append(f"{who}: {entry['text']}")
    return "\n".join(lines)


async def verdict(
    brain: Brain, model: str | None, criterion: str, transcript: Sequence[Mapping[str, Any]]
) -> tuple[bool, str]:
    answer = await brain.complete(
        [
            {"role": "system", "content": JUDGE_INSTRUCTIONS},
            {
                "role": "user",
                "content": f"Criterion: {criterion}\n\nConversation:\n{_as_text(transcript)}",
            },
        ],
        model=model,
        temperature=0,
    )
    text = answer.strip().removeprefix("```json").removeprefix("```").removesuffix("```")
    try:
        parsed = orjson.loads(text.strip())
    except orjson.JSONDecodeError:
        parsed = None
    if (
        not isinstance(parsed, dict)
        or not isinstance(parsed.get("passed"), bool)
        or not isinstance(parsed.get("reason", ""), str)
    ):
        raise UnreadableVerdict(
            f"the judge's answer to {criterion!r} is not a verdict: {answer[:500]!r}"
        )
    return parsed["passed"], str(parsed.get("reason", ""))


async def caller_line(
    brain: Brain,
    model: str | None,
    caller: Mapping[str, Any],
    transcript: Sequence[Mapping[str, Any]],
) -> str | None:
    """The persona's next line, or None when it hangs up."""
    # The roles are swapped: to the model playing the caller, the agent is the other party.
    messages: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": f"{CALLER_INSTRUCTIONS}\nYou are: {caller['persona']}\n"
            f"Your goal: {caller['goal']}",
        }
    ]
    for entry in transcript:
        if entry.get("function_name") or not entry.get("text"):
            continue
        if entry.get("role") == "assistant":
            messages.append({"role": "user", "content": entry["text"]})
        elif entry.get("role") == "user":
            messages.append({"role": "assistant", "content": entry["text"]})
    if len(messages) == 1:
        messages.append({"role": "user", "content": "(the agent picked up and is silent)"})
    line = (await brain.complete(messages, model=model)).strip()
    if not line or HANG_UP in line.lower():
        return None
    return line[:2_000]
