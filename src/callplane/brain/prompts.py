"""What the brain is told after a call: the fixed instructions for summaries and analyzers,
over the call's stored transcript (SPEC entries: ``role``, ``text``, ``timestamp``,
``function_name``, ``arguments``). During the conversation it reads ``history.py``'s messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from callplane.brain.base import Message

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
