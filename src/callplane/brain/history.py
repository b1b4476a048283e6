"""The conversation as items, as livekit's ``llm/chat_context.py`` keeps it: lines said, tool
calls and their answers, each answer tied to its call by the call's id.

Two projections are read from it:

* ``transcript``: the SPEC's transcript entries (``role``, ``text``, ``timestamp``,
  ``function_name``, ``arguments``), kept in step with the items, as the call stores them and
  summaries, analyzers and a warm transfer's brief read them. They carry no call id, so a
  history is never rebuilt from them.
* ``messages(prompt)``: the chat-completions conversation the brain is sent.

Ids are the history's own (``call_1``, ``call_2``, …): a brain's ids may be blank or repeat
across rounds, and an answer must go back with the call that asked for it even when the same
tool was called twice and the second call finished first.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import orjson

from callplane.brain.base import Message
from callplane.privacy.redaction import Redactor

DEFAULT_CALL_PROMPT = (
    "You are a friendly, concise voice agent on a telephone call. Answer in one or two short "
    "spoken sentences, with no lists, markup or emoji."
)

#: What the brain reads for a call that never got an answer (cut off by the end of the call).
NO_RESULT = "no result"


@dataclass(eq=False)
class Said:
    role: Literal["user", "assistant"]
    text: str
    #: Seconds since the call was answered (None: a text conversation, in arrival order).
    timestamp: float | None = None
    #: The language it was said in, on a call that speaks of languages (docs/languages.md).
    language: str | None = None
    #: The caller's "uh-huh" while the agent spoke: kept in the transcript, not a turn (the
    #: brain is not sent it).
    backchannel: bool = False


@dataclass(eq=False)
class ToolCalled:
    call_id: str
    name: str
    arguments: dict[str, Any]
    timestamp: float | None = None


@dataclass(eq=False)
class ToolAnswered:
    call_id: str
    name: str
    text: str
    timestamp: float | None = None


Item = Said | ToolCalled | ToolAnswered
AnItem = TypeVar("AnItem", Said, ToolCalled, ToolAnswered)


@dataclass
class ChatHistory:
    items: list[Item] = field(default_factory=list)
    #: The SPEC transcript, one entry per item at the same index (``transcript`` projection).
    transcript: list[dict[str, Any]] = field(default_factory=list)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    #: The conversation's redaction (docs/privacy.md#redaction). This is the one place lines,
    #: tool calls and answers enter the history, so the transcript (what is stored, summarised,
    #: analysed and sent in events and webhooks) never holds what it replaces; with ``llm``
    #: the items, and so what the brain is sent, are redacted too.
    redactor: Redactor | None = None

    def __post_init__(self) -> None:
        if self.transcript and not self.items:
            raise ValueError("a history is not rebuilt from a transcript (it has no call ids)")
        self.transcript[:] = [self._entry(item) for item in self.items]

    def call_id(self) -> str:
        return f"call_{next(self._ids)}"

    def add(self, item: AnItem) -> AnItem:
        """Record ``item`` in timestamp order (items without one go last)."""
        if item.timestamp is None:
            index = len(self.items)
        else:
            keys = [i.timestamp or 0.0 for i in self.items]
            index = bisect.bisect_right(keys, item.timestamp)
        return self._insert(index, item)

    def add_after(self, item: ToolCalled, anchor: Item) -> ToolCalled:
        """Record ``item`` with ``anchor``, at its moment: after it and the calls already
        recorded with it, before anything said since, whatever the order it was recorded in (a
        line's tool calls). Where ``anchor`` is no longer kept, in timestamp order."""
        index = next((n + 1 for n, kept in enumerate(self.items) if kept is anchor), None)
        if index is None or anchor.timestamp is None:
            return self.add(item)
        while index < len(self.items):
            following = self.items[index]
            if not isinstance(following, ToolCalled) or following.timestamp != anchor.timestamp:
                break
            index += 1
        item.timestamp = anchor.timestamp
        return self._insert(index, item)

    def _insert(self, index: int, item: AnItem) -> AnItem:
        entry = self._entry(item)
        self.items.insert(index, item)
        self.transcript.insert(index, entry)
        return item

    def _entry(self, item: Item, *, count: bool = True) -> dict[str, Any]:
        """The item's transcript entry, redacted (and, with ``llm``, the item as well)."""
        redactor = self.redactor
        if redactor is None:
            return entry_of(item)
        if isinstance(item, ToolCalled):
            arguments = redactor.value(item.arguments, count=count)
            if redactor.llm:
                item.arguments = arguments
            return {**entry_of(item), "arguments": arguments}
        text = redactor.text(item.text, count=count)
        if redactor.llm:
            item.text = text
        return {**entry_of(item), "text": text}

    def remove(self, item: Item) -> None:
        index = self._index(item)
        del self.items[index]
        del self.transcript[index]

    def retext(self, item: Said, text: str) -> None:
        """A line cut short: it keeps what was heard of it."""
        item.text = text
        self.transcript[self._index(item)]["text"] = self._entry(item, count=False)["text"]

    def _index(self, item: Item) -> int:
        return next(n for n, candidate in enumerate(self.items) if candidate is item)

    def messages(self, call_prompt: str | None) -> list[Message]:
        return chat_messages(call_prompt, self.items)


def entry_of(item: Item) -> dict[str, Any]:
    """An item as a SPEC transcript entry."""
    entry: dict[str, Any]
    if isinstance(item, Said):
        entry = {"role": item.role, "text": item.text}
        if item.language is not None:
            entry["language"] = item.language
        if item.backchannel:
            entry["backchannel"] = True
    elif isinstance(item, ToolCalled):
        entry = {
            "role": "assistant",
            "function_name": item.name,
            "arguments": item.arguments,
            "text": "",
        }
    else:
        entry = {"role": "tool", "function_name": item.name, "text": item.text}
    if item.timestamp is not None:
        entry["timestamp"] = item.timestamp
    return entry


def chat_messages(call_prompt: str | None, items: Sequence[Item]) -> list[Message]:
    """The chat so far. Each run of tool calls (one brain reply's) is sent as one assistant
    message with each call's answer right after it, as chat completions require, even when
    the caller spoke in between; a call never answered reads "no result"."""
    messages: list[Message] = [{"role": "system", "content": call_prompt or DEFAULT_CALL_PROMPT}]
    answers = {item.call_id: n for n, item in enumerate(items) if isinstance(item, ToolAnswered)}
    used: set[int] = set()
    index = 0
    while index < len(items):
        item = items[index]
        if isinstance(item, ToolCalled):
            group: list[ToolCalled] = []
            while index < len(items) and isinstance(call := items[index], ToolCalled):
                group.append(call)
                index += 1
            # What the agent said while its tools ran ("One moment, let me check.") was said
            # before their answers: it goes with the calls, not after the answers, where the
            # model would read it as said once it had the results.
            answered = [answers[c.call_id] for c in group if c.call_id in answers]
            meanwhile = _said_meanwhile(items, index, max(answered, default=index))
            used.update(meanwhile)
            said = " ".join(_text(items[n]) for n in meanwhile)
            messages.append(
                {
                    "role": "assistant",
                    "content": said or None,
                    "tool_calls": [_tool_call(call) for call in group],
                }
            )
            for call in group:
                answer = items[answers[call.call_id]] if call.call_id in answers else None
                content = answer.text if isinstance(answer, ToolAnswered) else None
                messages.append(
                    {"role": "tool", "tool_call_id": call.call_id, "content": content or NO_RESULT}
                )
            continue
        if index not in used and isinstance(item, Said) and item.text and not item.backchannel:
            messages.append({"role": item.role, "content": item.text})
        index += 1
    return messages


def _tool_call(call: ToolCalled) -> dict[str, Any]:
    return {
        "id": call.call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": orjson.dumps(call.arguments).decode()},
    }


def _said_meanwhile(items: Sequence[Item], after: int, until: int) -> list[int]:
    """The agent's lines between a group of tool calls and the last of their answers."""
    return [
        n
        for n in range(after, until)
        if isinstance(said := items[n], Said) and said.role == "assistant" and said.text
    ]


def _text(item: Item) -> str:
    return item.text if isinstance(item, Said | ToolAnswered) else ""
