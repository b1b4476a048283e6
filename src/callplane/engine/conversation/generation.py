"""One answer of the agent: its brain requests and the tool rounds between them, spoken into
lines (as livekit's ``generation.py`` sits beside its agent activity).

The turn loop owns the conversation: which line is current, barge-ins, how the call ends. This
module reaches it only through ``Lines``, a small port, and returns what the answer came to
(``Answered``), so it imports nothing of the turn loop. An answer that asks for tools runs them
all at once, says a line to hold the caller when none has answered within a second, sends their
results back and asks again, in a new line on the same task, up to ``MAX_TOOL_ROUNDS``.

A brain that is busy (502, 503, 504) or unreachable before its first token is asked once more;
any other failure, or a second one, is the turn loop's to apologise for.

A caller's turn may have been answered early (``speculate``, on the pause's words: a
``Speculation``): its first request then reads that answer, if it was asked the same thing;
otherwise the early answer is discarded, unheard, and the brain is asked now.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from callplane.brain import Brain, BrainError, ReplyEvent, SentenceSplitter, TextDelta, ToolCall
from callplane.brain.base import RETRY_AFTER_SECONDS
from callplane.engine.agent import AgentSpec
from callplane.engine.conversation.reply import Reply
from callplane.engine.conversation.speaking import Speaker
from callplane.engine.conversation.speculation import Speculation
from callplane.engine.conversation.transcript import TranscriptLog
from callplane.observability import turns
from callplane.tools import ToolContext, knowledge
from callplane.tools.toolbox import Toolbox, ToolUse, error_text

log = logging.getLogger("callplane.engine.turns")

#: Brain requests with tools in one answer; the last is asked without them, so a brain that
#: keeps calling tools still ends up saying something.
MAX_TOOL_ROUNDS = 5
#: A tool without a result by then: its ``speak_while_running`` line is said.
SPEAK_WHILE_RUNNING_AFTER = 1.0
INTERRUPTED = "interrupted: the caller spoke before it finished"

#: ``report(type, data)``: writes one of the call's events.
Report = Callable[[str, dict[str, Any]], Awaitable[None]]


class Lines(Protocol):
    """What generation asks of the conversation it speaks in (the turn loop)."""

    def follow(self, reply: Reply) -> Reply:
        """A new line after ``reply``, on its task, now the conversation's current one."""
        ...

    def close_line(self, reply: Reply, caller_ended_at: float | None) -> None:
        """The line is generated: record it (and the turn's latency, when measured on it)."""
        ...

    async def apologise(self, reply: Reply, error: BrainError) -> None:
        """The brain failed: say so in ``reply`` and end the call."""
        ...


@dataclass(frozen=True)
class Answered:
    #: The answer's last line.
    reply: Reply
    #: The line before the last (the one whose tools ended the call), else ``reply``.
    previous: Reply
    #: A tool ended the call, for this reason, once both lines have been heard.
    end_call: str | None = None
    #: The brain failed: apologised for, the call ending.
    failed: bool = False


@dataclass
class Generation:
    lines: Lines
    speaker: Speaker
    transcript: TranscriptLog
    spec: AgentSpec
    brain: Brain
    toolbox: Toolbox
    tool_context: ToolContext
    report: Report
    #: Event writes not awaited where they were started (a cancelled tool use's).
    _background: set[asyncio.Task[Any]] = field(default_factory=set)
    #: The answer asked on the caller's last pause, for the turn it may turn out to be.
    _speculation: Speculation | None = None

    def __post_init__(self) -> None:
        self.tool_context.say = self.say_for_tool

    async def answer(
        self,
        reply: Reply,
        caller_ended_at: float | None,
        timing: turns.TurnTiming | None = None,
        heard: str | None = None,
    ) -> Answered:
        """The brain's answer into ``reply`` (to the caller's words ``heard``, None for the
        opening); when it asks for tools, they run, their results go back and the brain
        answers again, in a line of its own."""
        speculation, self._speculation = self._speculation, None
        try:
            return await self._answer(reply, caller_ended_at, timing, heard, speculation)
        finally:
            if speculation is not None:
                speculation.discard()  # nothing if it was kept

    async def _answer(
        self,
        reply: Reply,
        caller_ended_at: float | None,
        timing: turns.TurnTiming | None,
        heard: str | None,
        speculation: Speculation | None,
    ) -> Answered:
        if heard is not None:
            await self._consult(heard)
        else:
            speculation = None
        rounds = 0
        while True:
            calls = await self._generate(
                reply, caller_ended_at, rounds < MAX_TOOL_ROUNDS, timing, speculation
            )
            speculation = None
            rounds += 1
            if calls is None:
                return Answered(reply, reply, failed=True)
            if not calls:
                return Answered(reply, reply)
            if reply.first_media_at is not None:
                # The turn's latency was measured on this line.
                caller_ended_at, timing = None, None
            follow = self.lines.follow(reply)
            uses = await self._use_tools(follow, calls, caller_ended_at)
            ending = next((use.end_call for use in uses if use.end_call), None)
            if ending is not None:
                self.lines.close_line(follow, None)
                return Answered(follow, reply, end_call=ending)
            if follow.first_media_at is not None:
                caller_ended_at, timing = None, None
            reply = follow

    def speculate(self, heard: str, began_at: float) -> None:
        """Ask the brain now for the answer to ``heard``, the words of a caller's turn begun at
        ``began_at`` that may not be over: read ahead, unheard, for ``answer`` to keep or
        discard. Not with ``knowledge.auto``: its search of the final words comes first."""
        self.drop_speculation()
        if knowledge.auto_enabled(self.spec.knowledge):
            return
        self._speculation = Speculation.start(
            self.brain,
            self.spec,
            self.transcript.messages_if(began_at, heard, self.spec.prompt),
            self.toolbox.definitions(),
            self.speaker,
            heard,
        )

    def drop_speculation(self) -> None:
        """The caller went on: the early answer is not the turn's."""
        if self._speculation is not None:
            self._speculation.discard()
            self._speculation = None

    async def settle(self) -> None:
        """Wait for the event writes still under way (before the call ends)."""
        self.drop_speculation()
        for task in list(self._background):
            try:
                await task
            except Exception:
                log.debug("an event write failed", exc_info=True)

    async def _generate(
        self,
        reply: Reply,
        caller_ended_at: float | None,
        offer_tools: bool,
        timing: turns.TurnTiming | None = None,
        speculation: Speculation | None = None,
    ) -> list[ToolCall] | None:
        """One brain request (or the early answer to it, ``speculation``, if it was asked the
        same), spoken into ``reply`` and recorded; the tools it asked for (recorded too), or
        None when the brain failed."""
        messages = self.transcript.messages(self.spec.prompt)
        tools = self.toolbox.definitions() if offer_tools else []
        stream: asyncio.Queue[ReplyEvent | BrainError | None]
        if speculation is not None and speculation.fits(messages, tools, self.spec):
            stream, thinking = speculation.keep()
        else:
            if speculation is not None:
                speculation.discard()
            stream = asyncio.Queue()
            thinking = asyncio.create_task(_think(self.brain, self.spec, messages, tools, stream))
        # Nothing said yet on this line: its first words may go ahead of their sentence.
        splitter = SentenceSplitter(opening_clause=not reply.sentences)
        tool_calls: list[ToolCall] = []
        answered = retried = spoke = False
        try:
            while (item := await stream.get()) is not None:
                if isinstance(item, BrainError):
                    if answered or retried or not item.retryable:
                        raise item
                    # Busy or unreachable before a word: asked once more, the caller none the
                    # wiser, rather than apologised to and hung up on.
                    retried = True
                    log.warning("the brain failed before answering; asking again: %s", item)
                    await asyncio.sleep(RETRY_AFTER_SECONDS)
                    thinking = asyncio.create_task(
                        _think(self.brain, self.spec, messages, tools, stream)
                    )
                    continue
                answered = True
                if isinstance(item, TextDelta):
                    spoke = spoke or bool(item.text.strip())
                    turns.token(timing)
                    for sentence in splitter.feed(item.text):
                        await self.speaker.say(reply, sentence)
                else:
                    tool_calls.append(item)
            if rest := splitter.flush():
                await self.speaker.say(reply, rest)
            await self.speaker.end_line(reply)
            if not tool_calls and not spoke:
                # A finished reply with nothing in it is a model's right, but the caller hears
                # silence: an operator reading the logs must be able to find out why.
                log.warning("the brain finished its reply without a word or a tool call")
        except BrainError as exc:
            await self.lines.apologise(reply, exc)
            return None
        finally:
            thinking.cancel()
            self.lines.close_line(reply, caller_ended_at)
        if not offer_tools and tool_calls:
            # Tools were not offered this time: what was said stands, the calls are dropped.
            log.warning("the brain asked for tools it was not offered; ignored")
            return []
        # Asked for in the line, so placed with it, right after it: the brain reads the line,
        # then its calls, then what the caller said in answer to the line (recorded first when
        # the caller spoke as the line ended). Without a line, where they are asked for.
        now = time.monotonic()
        if reply.sentences:
            now = max(now, reply.sentences[0][0])
        calls = [self.transcript.call(now, call, after=reply.entry) for call in tool_calls]
        await turns.report(timing, reply.first_media_at, self.transcript.elapsed, self.report)
        return calls

    async def _use_tools(
        self, follow: Reply, calls: list[ToolCall], caller_ended_at: float | None
    ) -> list[ToolUse]:
        """Every call at once; a line to hold the caller if none has answered within a
        second; each use recorded (transcript, ``tool.called``) as it is answered. A barge-in
        cancels the uses still running: they are recorded as interrupted."""
        toolbox, context = self.toolbox, self.tool_context
        pending = {asyncio.create_task(toolbox.use(call, context)): call for call in calls}
        uses: list[ToolUse] = []
        hold = toolbox.speak_while_running(calls)
        began = time.monotonic()
        try:
            while pending:
                timeout = None
                if hold is not None:
                    timeout = max(0.0, began + SPEAK_WHILE_RUNNING_AFTER - time.monotonic())
                done, _ = await asyncio.wait(
                    pending, timeout=timeout, return_when="FIRST_COMPLETED"
                )
                if not done and hold is not None:
                    line, hold = hold, None
                    await self._say_hold(line, caller_ended_at)
                for task in done:
                    del pending[task]
                    use = task.result()
                    uses.append(use)
                    await self._record_use(use)
        finally:
            if pending:
                for task in pending:
                    task.cancel()
                for call in pending.values():
                    use = ToolUse(
                        call, error_text(INTERRUPTED), "interrupted", time.monotonic() - began
                    )
                    self.transcript.answer(time.monotonic(), call, use.text)
                    self._report_later("tool.called", use.event())
        return uses

    async def say_for_tool(self, line: str) -> None:
        """A tool's line to the caller (a transfer's message), heard before the tool goes on."""
        said = Reply()
        await self.speaker.say(said, line)
        await self.speaker.end_line(said)
        self.lines.close_line(said, None)
        await said.wait_for_playout()

    async def _say_hold(self, line: str, caller_ended_at: float | None) -> None:
        hold = Reply()
        await self.speaker.say(hold, line)
        await self.speaker.end_line(hold)
        self.lines.close_line(hold, caller_ended_at)

    async def _record_use(self, use: ToolUse) -> None:
        self.transcript.answer(time.monotonic(), use.call, use.text)
        self._report_later("tool.called", use.event())

    async def _consult(self, heard: str) -> None:
        """``knowledge.auto``: the caller's words looked up before the brain is asked; what was
        found goes into the history as a ``knowledge_search`` call and its answer (the brain
        reads it, the transcript shows it) and into an ``agent.knowledge`` event. A search
        that fails or is slow is left out: the reply never waits long on it."""
        context = self.tool_context
        if not knowledge.auto_enabled(self.spec.knowledge):
            return
        if context.runtime is None or context.organization_id is None:
            return
        assert self.spec.knowledge is not None
        try:
            async with asyncio.timeout(knowledge.AUTO_TIMEOUT_SECONDS):
                consulted = await knowledge.consult(
                    context.runtime, context.organization_id, self.spec.knowledge, heard
                )
        except Exception:
            log.exception("knowledge.auto failed; answering without it")
            return
        if consulted is None:
            return
        now = time.monotonic()
        call = self.transcript.call(now, ToolCall(knowledge.TYPE, {"query": consulted.query}))
        self.transcript.answer(now, call, consulted.text)
        self._report_later("agent.knowledge", consulted.event)

    def _report_later(self, type_: str, data: dict[str, Any]) -> None:
        """Write an event beside the conversation: a barge-in cancelling the line must not
        cancel the write (``settle`` waits for them before the call ends)."""
        job = asyncio.create_task(self._report_quietly(type_, data))
        self._background.add(job)
        job.add_done_callback(self._background.discard)

    async def _report_quietly(self, type_: str, data: dict[str, Any]) -> None:
        try:
            await self.report(type_, data)
        except Exception:
            log.exception("could not record the event %s", type_)


async def _think(
    brain: Brain,
    spec: AgentSpec,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    out: asyncio.Queue[ReplyEvent | BrainError | None],
) -> None:
    try:
        replies = brain.stream_reply(
            messages, tools=tools, model=spec.model, temperature=spec.temperature
        )
        async for event in replies:
            out.put_nowait(event)
    except BrainError as exc:
        out.put_nowait(exc)
    except Exception as exc:
        # Anything else would end this task unseen and leave the line waiting in silence.
        log.exception("the brain's reply could not be read")
        out.put_nowait(BrainError(f"the reply could not be read ({type(exc).__name__}: {exc})"))
    else:
        out.put_nowait(None)
