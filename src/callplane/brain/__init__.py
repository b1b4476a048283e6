"""The agent's brain (docs/engine-core.md): an OpenAI-compatible chat client, the call's summary and
its analyzers. Nothing here knows about calls in the database: transcripts in, text and JSON out.

``Brain`` is the protocol the engine uses (``base.py``); ``ChatCompletionsBrain`` the one
provider so far; ``build_brain`` picks the configured one.
"""

from __future__ import annotations

from callplane.brain.analyzers import run_analyzers
from callplane.brain.base import Brain, BrainError, ReplyEvent, TextDelta, ToolCall
from callplane.brain.build import build_brain
from callplane.brain.client import ChatCompletionsBrain
from callplane.brain.history import ChatHistory, Said, ToolAnswered, ToolCalled
from callplane.brain.sentences import SentenceSplitter
from callplane.brain.summary import Summary, summarize

__all__ = [
    "Brain",
    "BrainError",
    "ChatHistory",
    "ChatCompletionsBrain",
    "ReplyEvent",
    "Said",
    "SentenceSplitter",
    "Summary",
    "TextDelta",
    "ToolAnswered",
    "ToolCall",
    "ToolCalled",
    "build_brain",
    "run_analyzers",
    "summarize",
]
