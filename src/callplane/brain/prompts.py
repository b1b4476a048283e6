"""What the brain is told: the call's prompt and transcript as chat messages, and the fixed
instructions for summaries and analyzers.

Transcript entries are the SPEC's shape (``role``, ``text``, ``timestamp``, ``function_name``,
``arguments``). A tool-call entry becomes an assistant message carrying the call plus the tool's
answer, so the history stays a valid chat-completions conversation on every server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from callplane.brain.base import Message

DEFAULT_CALL_PROMPT = (
    "You are a friendly, concise voice agent on a telephone call. Answer in one or two short "
    "spoken sentences, with no lists, markup or emoji."
)

SUMMARY_INSTRUCTIONS = (
    "Summarise the following telephone call between an agent and a caller in at most three "
    "plain sentences, in the third person. Answer with the summary only."
)

ANALYZER_INSTRUCTIONS = (
    "You analyse a telephone call between an agent and a caller. Answer the question about it "
    "with a single JSON object (no prose, no code fences) that is valid against this JSON "
    "schema:\n{schema}"
)

Entry = Mapping[str, Any]


def conversation_messages(call_prompt: str | None, transcript: Sequence[Entry]) -> list[Message]:
    """The chat so far. Each tool call (an assistant entry with ``function_name``) is sent with
    its answer (the next ``tool`` entry of that name) right after it, as chat completions
    require, even when the caller spoke in between; a call never answered reads "no result"."""
    messages: list[Message] = [{"role": "system", "content": call_prompt or DEFAULT_CALL_PROMPT}]
    answers = _tool_answers(transcript)
    used = set(answers.values())
    index = 0
    while index < len(transcript):
        entry = transcript[index]
        if _is_call(entry):
            group = []
            while index < len(transcript) and _is_call(transcript[index]):
                group.append(index)
                index += 1
            # What the agent said while its tools ran ("One moment, let me check.") was said
            # before their answers: it goes with the calls, not after the answers, where the
            # model would read it as said once it had the results.
            meanwhile = _said_meanwhile(transcript, index, [answers.get(n) for n in group])
            used.update(meanwhile)
            said = " ".join(transcript[n]["text"] for n in meanwhile)
            messages.append(
                {
                    "role": "assistant",
                    "content": said or None,
                    "tool_calls": [
                        {
                            "id": f"call_{number}",
                            "type": "function",
                            "function": {
                                "name": transcript[number]["function_name"],
                                "arguments": orjson.dumps(
                                    transcript[number].get("arguments") or {}
                                ).decode(),
                            },
                        }
                        for number in group
                    ],
                }
            )
            for number in group:
                answer = answers.get(number)
                content = transcript[answer].get("text") if answer is not None else None
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": f"call_{number}",
                        "content": content or "no result",
                    }
                )
            continue
        if index not in used and entry.get("role") != "tool" and entry.get("text"):
            role = "assistant" if entry.get("role") == "assistant" else "user"
            messages.append({"role": role, "content": entry["text"]})
        index += 1
    return messages


def _said_meanwhile(
    transcript: Sequence[Entry], after: int, answers: Sequence[int | None]
) -> list[int]:
    """The agent's lines between a group of tool calls and the last of their answers."""
    until = max((a for a in answers if a is not None), default=after)
    return [
        n
        for n in range(after, until)
        if transcript[n].get("role") == "assistant"
        and not transcript[n].get("function_name")
        and transcript[n].get("text")
    ]


def _is_call(entry: Entry) -> bool:
    return bool(entry.get("function_name")) and entry.get("role") != "tool"


def _tool_answers(transcript: Sequence[Entry]) -> dict[int, int]:
    """Each tool call's index -> the index of its answer."""
    answers: dict[int, int] = {}
    waiting: dict[str, list[int]] = {}
    for index, entry in enumerate(transcript):
        name = entry.get("function_name")
        if not name:
            continue
        if entry.get("role") == "tool":
            if waiting.get(name):
                answers[waiting[name].pop(0)] = index
        else:
            waiting.setdefault(name, []).append(index)
    return answers


def render_transcript(transcript: Sequence[Entry]) -> str:
    """The transcript as plain lines ("Agent: …", "Caller: …") for summaries and analyzers."""
    lines = []
    for entry in transcript:
        if entry.get("function_name") and entry.get("role") == "tool":
            lines.append(f"[{entry['function_name']} answered {entry.get('text') or ''}]")
        elif entry.get("function_name"):
            arguments = orjson.dumps(entry.get("arguments") or {}).decode()
            lines.append(f"[agent used {entry['function_name']} {arguments}]")
        elif entry.get("text"):
            speaker = "Agent" if entry.get("role") == "assistant" else "Caller"
            lines.append(f"{speaker}: {entry['text']}")
    return "\n".join(lines) or "(nothing was said)"


def summary_messages(transcript: Sequence[Entry], instructions: str | None = None) -> list[Message]:
    messages: list[Message] = [{"role": "system", "content": SUMMARY_INSTRUCTIONS}]
    if instructions:
        # Its own message, after the fixed one: the agent's wishes refine, never replace, them.
        messages.append({"role": "system", "content": instructions})
    messages.append({"role": "user", "content": render_transcript(transcript)})
    return messages


def analyzer_messages(
    prompt: str, output_config: Mapping[str, Any], transcript: Sequence[Entry]
) -> list[Message]:
    schema = orjson.dumps(output_config).decode()
    return [
        {"role": "system", "content": ANALYZER_INSTRUCTIONS.format(schema=schema)},
        {
            "role": "user",
            "content": f"Transcript:\n{render_transcript(transcript)}\n\nQuestion: {prompt}",
        },
    ]
