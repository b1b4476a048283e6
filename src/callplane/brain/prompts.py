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

END_CALL_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "end_call",
        "description": "Hang up once the conversation is over (say goodbye first).",
        "parameters": {
            "type": "object",
            "properties": {"reason": {"type": "string", "description": "why the call ends"}},
        },
    },
}

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
    messages: list[Message] = [{"role": "system", "content": call_prompt or DEFAULT_CALL_PROMPT}]
    for number, entry in enumerate(transcript):
        if entry.get("function_name"):
            call_id = f"call_{number}"
            arguments = orjson.dumps(entry.get("arguments") or {}).decode()
            messages.append(
                {
                    "role": "assistant",
                    "content": entry.get("text") or None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": entry["function_name"], "arguments": arguments},
                        }
                    ],
                }
            )
            messages.append({"role": "tool", "tool_call_id": call_id, "content": "done"})
        elif entry.get("text"):
            role = "assistant" if entry.get("role") == "assistant" else "user"
            messages.append({"role": role, "content": entry["text"]})
    return messages


def render_transcript(transcript: Sequence[Entry]) -> str:
    """The transcript as plain lines ("Agent: …", "Caller: …") for summaries and analyzers."""
    lines = []
    for entry in transcript:
        if entry.get("function_name"):
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
