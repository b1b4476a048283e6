"""What the engine asks of a brain. A second LLM provider is one module with a class of this
shape (``client.py`` is the OpenAI-compatible one) and one line in ``engine/providers.py``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

Message = dict[str, Any]

#: A brain that failed retryably before its first token is asked once more, this long after:
#: on a call and in a text turn alike, one busy moment is not worth an apology.
RETRY_AFTER_SECONDS = 0.2


class BrainError(Exception):
    """The brain could not answer; the message says why, for the call's events. ``retryable``:
    the server was unreachable or said it is busy (502, 503, 504) before answering anything,
    so asking once more may well work."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    call_id: str = ""


ReplyEvent = TextDelta | ToolCall


class Brain(Protocol):
    """Every failure is raised as ``BrainError``, and nothing waits on a brain gone quiet."""

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        temperature: float | None = None,
    ) -> str:
        """The whole text of one answer (summaries, analyzers)."""
        ...

    def stream_reply(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] = (),
        model: str | None = None,
        temperature: float | None = None,
    ) -> AsyncIterator[ReplyEvent]:
        """A conversational turn as it is generated: ``TextDelta`` as text arrives, each
        ``ToolCall`` once its arguments are complete."""
        ...

    async def aclose(self) -> None: ...
