"""The call's chat history (``brain/history.py``) on the call's clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from callplane.brain import ChatHistory, Said, ToolCall
from callplane.brain.history import ToolAnswered, ToolCalled
from callplane.privacy.redaction import Redactor


@dataclass
class TranscriptLog:
    """The call's chat history on the call's clock: ``at`` is a ``time.monotonic()`` reading,
    stored as seconds since the call was answered. ``entries`` (the SPEC transcript the call
    stores) is kept in step with it."""

    entries: list[dict[str, Any]]
    #: Seconds since the call was answered, now.
    elapsed: Callable[[], float]
    #: The call's language now, stamped on what is said (None: entries carry none).
    language: Callable[[], str | None] = lambda: None
    history: ChatHistory = field(init=False)
    #: Each call's stamp, by id: its answer is never placed before it.
    _called: dict[str, float] = field(default_factory=dict)
    #: The call's redaction: the history redacts; the log notes where redacted lines were said.
    redactor: Redactor | None = None

    def __post_init__(self) -> None:
        self.history = ChatHistory(transcript=self.entries, redactor=self.redactor)

    def _stamp(self, at: float) -> float:
        return round(max(0.0, self.elapsed() - (time.monotonic() - at)), 3)

    def say(
        self,
        at: float,
        role: Literal["user", "assistant"],
        text: str,
        until: float | None = None,
        backchannel: bool = False,
    ) -> Said:
        """``until``: when the line ended, if known (a caller's turn). ``backchannel``: the
        caller's "uh-huh" over the agent, kept but never answered."""
        redactor = self.redactor
        before = redactor.total() if redactor is not None else 0
        said = Said(role, text, self._stamp(at), self.language(), backchannel=backchannel)
        said = self.history.add(said)
        if redactor is not None and redactor.covers(role, text, redactor.total() > before):
            assert said.timestamp is not None
            end = self._stamp(until) if until is not None else None
            redactor.said.append((role, said.timestamp, end))
        return said

    def call(self, at: float, call: ToolCall, after: Said | None = None) -> ToolCall:
        """Record the brain's call; the call as the toolbox runs it, with the history's id.
        ``after``: the line it was asked for in, which its calls follow at once, at its moment
        (a caller who answered the line spoke after them, whenever that was recorded)."""
        call = replace(call, call_id=self.history.call_id())
        called = ToolCalled(call.call_id, call.name, call.arguments, self._stamp(at))
        if after is None:
            self.history.add(called)
        else:
            self.history.add_after(called, after)
        assert called.timestamp is not None
        self._called[call.call_id] = called.timestamp
        return call

    def answer(self, at: float, call: ToolCall, text: str) -> None:
        # A tool can answer before the line that asked for it has begun to be heard.
        stamp = max(self._stamp(at), self._called.get(call.call_id, 0.0))
        self.history.add(ToolAnswered(call.call_id, call.name, text, stamp))

    def messages(self, call_prompt: str | None) -> list[dict[str, Any]]:
        return self.history.messages(call_prompt)

    def messages_if(self, at: float, text: str, call_prompt: str | None) -> list[dict[str, Any]]:
        """The messages as they would be once the caller's ``text`` (begun at ``at``) is
        recorded, without recording it: what a speculative reply is asked with."""
        redactor = self.redactor
        if redactor is not None and redactor.llm:
            # As ``say`` would record it for the brain; not counted: it may never be said.
            text = redactor.text(text, count=False)
        # The items are already as the brain reads them: no redactor to redact them again.
        history = ChatHistory(items=list(self.history.items))
        history.add(Said("user", text, self._stamp(at), self.language()))
        return history.messages(call_prompt)
