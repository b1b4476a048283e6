"""A speculative reply: the brain asked on a pause's words, before the caller's turn is sure to
be over (docs/voices.md#speculative-reply).

The listener tells the pause's words as soon as they are read (``LikelyTurnEnd``); the brain is
asked then with the conversation as it would be with those words, and its answer is read into
a queue, untouched. Its first words are synthesised ahead (``Speaker.prepare``) but never
played. When the turn does end, the answer is kept only if the brain would be asked the very
same thing: the same conversation, tools, model and temperature, the caller's words equal but
for case, punctuation and spacing. Kept, the queued answer is spoken as if it were streaming
now; anything else cancels the request and the synthesis, with nothing heard.

Tool calls in it are only read, never run: the answer is spoken, and its tools run, once the
turn is confirmed (``generation.py``), so a discarded guess has no side effects.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from callplane.brain import Brain, BrainError, ReplyEvent, SentenceSplitter, TextDelta
from callplane.engine.agent import AgentSpec
from callplane.engine.conversation.speaking import Speaker
from callplane.observability import metrics

log = logging.getLogger("callplane.engine.turns")

_NOT_WORD = re.compile(r"[^\w']+|_")

Stream = asyncio.Queue[ReplyEvent | BrainError | None]


def normal(text: str) -> str:
    """Words as compared: lower case, without punctuation, single spaces."""
    return " ".join(_NOT_WORD.sub(" ", text.casefold()).split())


def _request_key(
    messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]], spec: AgentSpec
) -> tuple[Any, ...]:
    said = [
        {**m, "content": normal(m["content"])}
        if m.get("role") == "user" and isinstance(m.get("content"), str)
        else m
        for m in messages
    ]
    return said, list(tools), spec.model, spec.temperature


@dataclass(eq=False)
class Speculation:
    """One early answer, asked of the brain and read ahead, until kept or discarded."""

    heard: str
    _key: tuple[Any, ...]
    _speaker: Speaker
    stream: Stream = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    _settled: bool = False

    @classmethod
    def start(
        cls,
        brain: Brain,
        spec: AgentSpec,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        speaker: Speaker,
        heard: str,
    ) -> Speculation:
        speculation = cls(heard, _request_key(messages, tools, spec), speaker)
        speculation.task = asyncio.create_task(speculation._read(brain, spec, messages, tools))
        return speculation

    def fits(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]],
        spec: AgentSpec,
    ) -> bool:
        """Whether the turn's request is the one asked early (the words normalised)."""
        return not self._settled and _request_key(messages, tools, spec) == self._key

    def keep(self) -> tuple[Stream, asyncio.Task[None]]:
        """The answer as a stream (what was read so far first), and the task still reading."""
        assert self.task is not None and not self._settled
        self._settled = True
        metrics.count_speculation(kept=True)
        return self.stream, self.task

    def discard(self) -> None:
        """Not the turn's words: the request and its synthesis stop, unheard."""
        if self._settled:
            return
        self._settled = True
        metrics.count_speculation(kept=False)
        if self.task is not None:
            self.task.cancel()
        self._speaker.forget()

    async def _read(
        self,
        brain: Brain,
        spec: AgentSpec,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
    ) -> None:
        # Split as the line will be (a fresh line: its opening clause may go ahead), so the
        # part prepared is the part the line starts with.
        splitter = SentenceSplitter(opening_clause=True)
        first: str | None = None
        try:
            replies = brain.stream_reply(
                messages, tools=tools, model=spec.model, temperature=spec.temperature
            )
            async for event in replies:
                self.stream.put_nowait(event)
                if first is None and isinstance(event, TextDelta):
                    first = next(iter(splitter.feed(event.text)), None)
                    if first is not None:
                        self._speaker.prepare(first)
        except BrainError as exc:
            self.stream.put_nowait(exc)
            return
        except Exception as exc:
            # As generation's own requests: never a silent end that leaves the line waiting.
            log.exception("the brain's early reply could not be read")
            error = BrainError(f"the reply could not be read ({type(exc).__name__}: {exc})")
            self.stream.put_nowait(error)
            return
        if first is None and (rest := splitter.flush()):
            self._speaker.prepare(rest)
        self.stream.put_nowait(None)
