"""The agent's brain (DESIGN §10): an OpenAI-compatible chat client, the call's summary and its
analyzers. Nothing here knows about calls in the database: transcripts in, text and JSON out.
"""

from __future__ import annotations

from callplane.brain.analyzers import run_analyzers
from callplane.brain.client import Brain, BrainError, ReplyEvent, TextDelta, ToolCall
from callplane.brain.prompts import END_CALL_TOOL, conversation_messages
from callplane.brain.sentences import SentenceSplitter
from callplane.brain.summary import Summary, summarize

__all__ = [
    "END_CALL_TOOL",
    "Brain",
    "BrainError",
    "ReplyEvent",
    "SentenceSplitter",
    "Summary",
    "TextDelta",
    "ToolCall",
    "conversation_messages",
    "run_analyzers",
    "summarize",
]
