"""The turn loop (DESIGN §10): the caller speaks, the brain answers, the agent speaks.

Three parts run at once, after pipecat's and livekit-agents' split of a voice pipeline:

    Listener (listening.py)   media in -> CallerSpeaking / CallerSaid / CallerGone
    TurnLoop (here)           decides: record the turn, start a reply, barge in, hang up
    reply task (here)         brain stream -> sentences -> Speaker (speaking.py) -> media out

A reply streams from the brain in its own task (feeding a queue), so generation never waits for
playback, and the first sentence is spoken as soon as it is complete. The caller speaking while
the agent generates or speaks is a barge-in: playback stops, the reply is cancelled, and what
the caller heard of it is what the transcript keeps. A brain that fails or times out gets a
short apology and a hang-up — the call ends ``completed``, never hung — and an event saying why.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from callplane.brain import (
    END_CALL_TOOL,
    Brain,
    BrainError,
    ReplyEvent,
    SentenceSplitter,
    TextDelta,
    ToolCall,
    conversation_messages,
)
from callplane.engine.listening import CallerEvent, CallerGone, CallerSaid, CallerSpeaking, Listener
from callplane.engine.speaking import Speaker
from callplane.observability import metrics, turns
from callplane.telephony.base import Connection

log = logging.getLogger("callplane.engine.turns")

APOLOGY = "I'm sorry, I'm having trouble right now. Please call back later. Goodbye."

#: ``report(type, data)``: writes one of the call's events.
Report = Callable[[str, dict[str, Any]], Awaitable[None]]


@dataclass
class TranscriptLog:
    """The call's transcript entries, kept in timestamp order (seconds since answered)."""

    entries: list[dict[str, Any]]
    #: Seconds since the call was answered, now.
    elapsed: Callable[[], float]

    def add(self, at: float, **entry: Any) -> dict[str, Any]:
        timestamp = round(max(0.0, self.elapsed() - (time.monotonic() - at)), 3)
        record = {**entry, "timestamp": timestamp}
        keys = [e.get("timestamp", 0.0) for e in self.entries]
        self.entries.insert(bisect.bisect_right(keys, timestamp), record)
        return record

    def remove(self, record: dict[str, Any]) -> None:
        self.entries[:] = [e for e in self.entries if e is not record]


@dataclass
class Agent:
    """What the call asks of its agent."""

    call_prompt: str | None = None
    first_message: str | None = None
    agent_speaks_first: bool | None = None


@dataclass
class TurnLoop:
    connection: Connection
    listener: Listener
    speaker: Speaker
    transcript: TranscriptLog
    agent: Agent
    brain: Brain | None
    report: Report
    #: Seconds from the end of each caller turn to the first media of the agent's reply.
    latencies: list[float] = field(default_factory=list)
    _inbox: asyncio.Queue[CallerEvent] = field(default_factory=asyncio.Queue)
    _reply: asyncio.Task[None] | None = None
    _line_open: bool = False
    #: The open line is the agent's opening (first_message or the brain's first line).
    _opening: bool = False
    #: The transcript entry of the line last spoken (a late barge-in shortens it).
    _last_line: dict[str, Any] | None = None
    _hanging_up: bool = False

    async def run(self) -> None:
        # The opening is started before listening, so it is under way (on the simulated
        # network: said) before anything the far end said at answer time is taken in.
        if self.agent.agent_speaks_first is not False:
            if self.agent.first_message:
                self._start(self._say_line(self.agent.first_message), opening=True)
            elif self.brain is not None:
                self._start(self._answer(None), opening=True)
        listening = asyncio.create_task(self._listen())
        try:
            while not isinstance(event := await self._inbox.get(), CallerGone):
                await self._on(event)
        finally:
            for task in (self._reply, listening):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task

    async def _listen(self) -> None:
        async for event in self.listener.events():
            self._inbox.put_nowait(event)

    async def _on(self, event: CallerEvent) -> None:
        if self._hanging_up:
            return
        if isinstance(event, CallerSpeaking):
            if self._heard_since(event.at):
                await self._barge_in()
            return
        if isinstance(event, CallerSaid):
            # A new caller turn supersedes an answer not yet complete (the brain answers both
            # together), and interrupts whatever the caller spoke over; the opening line is
            # not an answer to anything, so it is finished first.
            if self._heard_since(event.started_at) or (self._line_open and not self._opening):
                await self._barge_in()
            await self._settle()
            self.transcript.add(event.started_at, role="user", text=event.text)
            if self.brain is not None:
                self._start(self._answer(event.ended_at, turns.heard(event)))

    def _heard_since(self, at: float) -> bool:
        """Whether the agent is being heard and was already when the caller began at ``at``
        (speech from before our line began, replayed or queued, is no interruption of it)."""
        began = self.speaker.first_media_at
        return self.speaker.speaking and began is not None and at >= began

    def _start(self, reply: Coroutine[Any, Any, None], *, opening: bool = False) -> None:
        # The line is open from now, not from when the task first runs: a caller turn that
        # arrives before then supersedes it too.
        self._open_line()
        self._opening = opening
        self._reply = asyncio.create_task(reply)

    async def _settle(self) -> None:
        """Let a finished line's reply task complete its bookkeeping."""
        if self._reply is not None and not self._reply.done():
            with contextlib.suppress(asyncio.CancelledError):
                await self._reply

    async def _barge_in(self) -> None:
        await self.speaker.interrupt()
        if self._reply is not None and not self._reply.done() and self._line_open:
            self._reply.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reply
            self._close_line(None)  # when cancelled before it ran, nobody closed it
        elif self._last_line is not None:
            # The line was already recorded whole, while its audio was still playing.
            heard = self.speaker.line_text()
            if heard:
                self._last_line["text"] = heard
            else:
                self.transcript.remove(self._last_line)
            self._last_line = None

    # A reply: one spoken line, from begin_line to end_line.

    async def _say_line(self, text: str) -> None:
        try:
            await self.speaker.say(text)
            await self.speaker.end_line()
        finally:
            self._close_line(None)

    async def _answer(
        self, caller_ended_at: float | None, timing: turns.TurnTiming | None = None
    ) -> None:
        assert self.brain is not None
        messages = conversation_messages(self.agent.call_prompt, self.transcript.entries)
        stream: asyncio.Queue[ReplyEvent | BrainError | None] = asyncio.Queue()
        thinking = asyncio.create_task(_think(self.brain, messages, stream))
        splitter = SentenceSplitter()
        tool_calls: list[ToolCall] = []
        try:
            while (item := await stream.get()) is not None:
                if isinstance(item, BrainError):
                    raise item
                if isinstance(item, TextDelta):
                    turns.token(timing)
                    for sentence in splitter.feed(item.text):
                        await self.speaker.say(sentence)
                else:
                    tool_calls.append(item)
            if rest := splitter.flush():
                await self.speaker.say(rest)
            await self.speaker.end_line()
        except BrainError as exc:
            await self._apologise(exc)
            return
        finally:
            thinking.cancel()
            self._close_line(caller_ended_at)
        for call in tool_calls:
            self.transcript.add(
                time.monotonic(),
                role="assistant",
                function_name=call.name,
                arguments=call.arguments,
            )
        await turns.report(
            timing, self.speaker.first_media_at, self.transcript.elapsed, self.report
        )
        if any(call.name == "end_call" for call in tool_calls):
            await self._hang_up()

    def _open_line(self) -> None:
        self.speaker.begin_line()
        self._line_open = True
        self._last_line = None

    def _close_line(self, caller_ended_at: float | None) -> None:
        if not self._line_open:
            return
        self._line_open = False
        text = self.speaker.line_text()
        first_media_at = self.speaker.first_media_at
        if first_media_at is not None and caller_ended_at is not None:
            self.latencies.append(first_media_at - caller_ended_at)
        if text:
            at = first_media_at or time.monotonic()
            self._last_line = self.transcript.add(at, role="assistant", text=text)

    async def _apologise(self, error: BrainError) -> None:
        log.warning("the brain failed; apologising and hanging up", extra={"error": str(error)})
        self._hanging_up = True
        metrics.count_brain_error(error)
        with contextlib.suppress(Exception):
            await self.report("agent.brain_error", {"error": str(error)})
        await self.speaker.say(APOLOGY)
        await self.speaker.end_line()
        self._close_line(None)
        await self._hang_up()

    async def _hang_up(self) -> None:
        self._hanging_up = True
        await self.speaker.finish()
        await self.connection.hangup()


async def _think(
    brain: Brain, messages: list[dict[str, Any]], out: asyncio.Queue[ReplyEvent | BrainError | None]
) -> None:
    try:
        async for event in brain.stream_reply(messages, tools=[END_CALL_TOOL]):
            out.put_nowait(event)
    except BrainError as exc:
        out.put_nowait(exc)
    else:
        out.put_nowait(None)
