"""The turn loop (DESIGN §10, §15): the caller speaks, the brain answers, the agent speaks.

Three parts run at once, after pipecat's and livekit-agents' split of a voice pipeline:

    Listener (listening.py)   media in -> CallerSpeaking / CallerSaid / CallerGone
    TurnLoop (here)           decides: record the turn, start a reply, barge in, hang up
    reply task (here)         brain stream -> sentences -> Speaker (speaking.py) -> media out

Each agent line is a ``Reply`` (reply.py): what was queued and heard of it, whether it was cut
off, and a way to wait until it has been heard. A reply streams from the brain in its own task,
so generation never waits for playback, and the first sentence is spoken as soon as it is
complete. The caller speaking while the agent generates or speaks is a barge-in: playback
stops, the reply is cancelled, and what the caller heard of it is what the transcript keeps.

The agent (``AgentSpec``, agent.py) decides the rest: its prompt, opening, model; the call
ends when the brain asks ``end_call`` or a line holds an end-call phrase (once the line has
been heard), at the maximum length, after a silence (with a closing line), or at a voicemail
(hung up at once, or once a message left after the greeting's beep or the quiet after it). A
brain that fails or times out gets a short apology and a hang-up — the call ends ``completed``,
never hung — and an event saying why. The agent's disclosure, if it has one, is said before
anything else and no barge-in cuts it off (docs/answering-machines.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from callplane.brain import (
    Brain,
    BrainError,
    ChatHistory,
    ReplyEvent,
    Said,
    SentenceSplitter,
    TextDelta,
    ToolCall,
)
from callplane.brain.history import ToolAnswered, ToolCalled
from callplane.engine.agent import AgentSpec
from callplane.engine.conversation.listening import (
    CallerEvent,
    CallerGone,
    CallerSaid,
    CallerSpeaking,
    Listener,
)
from callplane.engine.conversation.reply import Reply
from callplane.engine.conversation.speaking import Speaker
from callplane.observability import metrics, turns
from callplane.speech.answering import GreetingEnd
from callplane.telephony.base import Connection
from callplane.tools import ToolContext, knowledge
from callplane.tools.toolbox import Toolbox, ToolUse, error_text

log = logging.getLogger("callplane.engine.turns")

APOLOGY = "I'm sorry, I'm having trouble right now. Please call back later. Goodbye."
CLOSING_LINE = "I haven't heard anything for a while, so I'll end the call now. Goodbye."

#: Why a conversation ended (the ``reason`` of ``call.ended``).
REMOTE_HANGUP = "the far end hung up"
AGENT_HANGUP = "the agent hung up"
MAX_LENGTH = "maximum call length reached"
SILENCE = "the caller was silent"
VOICEMAIL = "the agent hung up on a voicemail"

#: Brain requests with tools in one answer; the last is asked without them, so a brain that
#: keeps calling tools still ends up saying something.
MAX_TOOL_ROUNDS = 5
#: A tool without a result by then: its ``speak_while_running`` line is said.
SPEAK_WHILE_RUNNING_AFTER = 1.0
INTERRUPTED = "interrupted: the caller spoke before it finished"

#: ``report(type, data)``: writes one of the call's events.
Report = Callable[[str, dict[str, Any]], Awaitable[None]]
#: A line to say, into the reply it is given.
Line = Callable[[Reply], Coroutine[Any, Any, None]]


@dataclass(frozen=True)
class GreetingOver:
    """A voicemail's greeting has ended (its beep, or quiet after it): record the message."""


@dataclass
class TranscriptLog:
    """The call's chat history on the call's clock: ``at`` is a ``time.monotonic()`` reading,
    stored as seconds since the call was answered. ``entries`` (the SPEC transcript the call
    stores) is kept in step with it."""

    entries: list[dict[str, Any]]
    #: Seconds since the call was answered, now.
    elapsed: Callable[[], float]
    history: ChatHistory = field(init=False)

    def __post_init__(self) -> None:
        self.history = ChatHistory(transcript=self.entries)

    def _stamp(self, at: float) -> float:
        return round(max(0.0, self.elapsed() - (time.monotonic() - at)), 3)

    def say(self, at: float, role: Literal["user", "assistant"], text: str) -> Said:
        return self.history.add(Said(role, text, self._stamp(at)))

    def call(self, at: float, call: ToolCall) -> ToolCall:
        """Record the brain's call; the call as the toolbox runs it, with the history's id."""
        call = replace(call, call_id=self.history.call_id())
        self.history.add(ToolCalled(call.call_id, call.name, call.arguments, self._stamp(at)))
        return call

    def answer(self, at: float, call: ToolCall, text: str) -> None:
        self.history.add(ToolAnswered(call.call_id, call.name, text, self._stamp(at)))

    def messages(self, call_prompt: str | None) -> list[dict[str, Any]]:
        return self.history.messages(call_prompt)


@dataclass
class TurnLoop:
    connection: Connection
    listener: Listener
    speaker: Speaker
    transcript: TranscriptLog
    spec: AgentSpec
    brain: Brain | None
    report: Report
    #: ``human``, ``voicemail`` or None (not known): the spec's voicemail rule needs it.
    answered_by: str | None = None
    #: Seconds from the end of each caller turn to the first media of the agent's reply.
    latencies: list[float] = field(default_factory=list)
    _inbox: asyncio.Queue[CallerEvent | GreetingOver] = field(default_factory=asyncio.Queue)
    _getting: asyncio.Future[CallerEvent | GreetingOver] | None = None
    #: The agent's current (or last) line.
    _reply: Reply | None = None
    #: Set once the agent is ending the call: the caller's speech no longer matters.
    _ending: bool = False
    _reason: str | None = None
    #: Waiting for a voicemail greeting to end, to leave the message.
    _awaiting_greeting: bool = False
    #: The disclosure line, once begun: while it is being heard, no barge-in.
    _disclosure: Reply | None = None
    #: When the caller last did anything (the silence timeout counts from here or from the
    #: end of the agent's line, whichever is later).
    _last_heard: float = 0.0
    #: What tools may reach on this call (None: tools run with the connection alone).
    tool_context: ToolContext | None = None
    #: The agent's tools (built from ``spec.tools`` when not given).
    toolbox: Toolbox | None = None
    #: Event writes not awaited where they were started (a cancelled tool use's).
    _background: set[asyncio.Task[Any]] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.toolbox is None:
            self.toolbox = Toolbox.from_configs(self.spec.tools)
        if self.tool_context is None:
            self.tool_context = ToolContext(connection=self.connection)
        self.tool_context.say = self._say_for_tool

    async def run(self) -> str:
        """Hold the conversation until it ends; why it ended."""
        budget = self.spec.max_duration_seconds - self.transcript.elapsed()
        listening: asyncio.Task[None] | None = None
        try:
            async with asyncio.timeout(max(0.0, budget)):
                listening = await self._open()
                await self._converse()
        except TimeoutError:
            self._reason = MAX_LENGTH
            with contextlib.suppress(Exception):
                await self.connection.hangup()
        finally:
            tasks = [self._reply.task if self._reply else None, listening, self._getting]
            for task in tasks:
                if task is not None and not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            for task in list(self._background):
                with contextlib.suppress(Exception):
                    await task
        if self._reason is not None:
            return self._reason
        return AGENT_HANGUP if self.connection.ended_by == "local" else REMOTE_HANGUP

    async def _open(self) -> asyncio.Task[None] | None:
        self._last_heard = time.monotonic()
        voicemail = self.spec.voicemail if self.answered_by == "voicemail" else None
        if voicemail is not None and voicemail.action == "hang_up":
            await self._end_call(VOICEMAIL)
            return None
        if voicemail is not None:
            self._awaiting_greeting = True
            if self.connection.media == "audio":
                self.listener.on_audio = self._greeting_watch()
        else:
            # The opening is started before listening, so it is under way (on the simulated
            # network: said) before anything the far end said at answer time is taken in.
            opening = self._opening()
            if opening is not None or self.spec.disclosure:
                self._start(lambda r: self._disclosed(r, opening), True)
        return asyncio.create_task(self._listen())

    def _opening(self) -> Line | None:
        if not self.spec.agent_speaks_first:
            return None
        if self.spec.first_message:
            return lambda r: self._say_line(r, self.spec.first_message or "")
        if self.brain is not None:
            return lambda r: self._answer(r, None)
        return None

    async def _disclosed(self, reply: Reply, then: Line | None) -> None:
        """The disclosure first, whole (a caller speaking over it does not cut it off), then
        ``then`` in a line of its own."""
        disclosure = self.spec.disclosure
        if disclosure:
            self._disclosure = reply
            try:
                await self.speaker.say(reply, disclosure)
                await self.speaker.end_line(reply, more=then is not None)
            finally:
                self._close_line(reply, None)
            if then is None:
                return
            follow = Reply(opening=reply.opening)
            follow.task = reply.task
            self._reply = reply = follow
        if then is not None:
            await then(reply)

    def _greeting_watch(self) -> Callable[[bytes], None]:
        """Listens to the far end's audio for the end of the greeting, from its first frame
        (what was heard while deciding who answered is replayed first)."""
        greeting = GreetingEnd()

        def heard(pcm: bytes) -> None:
            if not greeting.done and greeting.feed(pcm):
                self.listener.on_audio = None
                self._inbox.put_nowait(GreetingOver())

        return heard

    def _leave_message(self) -> None:
        """The greeting has ended: the message (after the disclosure), then the call ends."""
        self._awaiting_greeting = False
        self._ending = True
        message = self.spec.voicemail.message if self.spec.voicemail else ""
        self._start(
            lambda r: self._disclosed(r, lambda f: self._say_line(f, message, then_end=VOICEMAIL))
        )

    async def _converse(self) -> None:
        if self._reason is not None:
            return
        while True:
            event = await self._next_event()
            if event is None:
                await self._close_for_silence()
            elif isinstance(event, CallerGone):
                return
            else:
                await self._on(event)

    async def _listen(self) -> None:
        async for event in self.listener.events():
            self._inbox.put_nowait(event)

    async def _next_event(self) -> CallerEvent | GreetingOver | None:
        """The caller's next event, or None once the caller has been silent too long."""
        while True:
            if self._getting is None:
                self._getting = asyncio.ensure_future(self._inbox.get())
            waits: set[asyncio.Future[Any]] = {self._getting}
            deadline = self._silence_deadline()
            reply = self._reply
            if reply is not None and reply.generating and reply.task and not reply.task.done():
                waits.add(reply.task)  # its end starts the silence clock
                deadline = None
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            done, _ = await asyncio.wait(waits, timeout=timeout, return_when="FIRST_COMPLETED")
            if self._getting in done:
                event = self._getting.result()
                self._getting = None
                return event
            if deadline is not None and time.monotonic() >= deadline:
                return None

    def _silence_deadline(self) -> float | None:
        seconds = self.spec.silence_timeout_seconds
        if seconds is None or self._ending:
            return None
        heard_until = self._reply.playout_ends_at if self._reply is not None else 0.0
        return max(self._last_heard, heard_until) + seconds

    async def _on(self, event: CallerEvent | GreetingOver) -> None:
        if self._ending:
            if isinstance(event, CallerSaid) and self.answered_by == "voicemail":
                # The greeting's words, recognised after the message began: still kept.
                self.transcript.say(event.started_at, "user", event.text)
            return
        self._last_heard = time.monotonic()
        reply = self._reply
        if isinstance(event, GreetingOver):
            if self._awaiting_greeting:
                self._leave_message()
            return
        disclosure = self._disclosure
        if disclosure is not None and (disclosure.generating or disclosure.playing):
            reply = None  # nothing the caller does cuts the disclosure off, nor what follows it
        if isinstance(event, CallerSpeaking):
            if reply is not None and reply.heard_since(event.at):
                await self._barge_in(reply)
            return
        if isinstance(event, CallerSaid):
            # A new caller turn supersedes an answer not yet complete (the brain answers both
            # together), and interrupts whatever the caller spoke over; the opening line is
            # not an answer to anything, so it is finished first.
            if reply is not None and (
                reply.heard_since(event.started_at) or (reply.generating and not reply.opening)
            ):
                await self._barge_in(reply)
            await self._settle()
            self.transcript.say(event.started_at, "user", event.text)
            if self._awaiting_greeting:
                # Audio: the greeting ends at its beep or after quiet (``GreetingOver``); a
                # text line has only the greeting's words to go by.
                if self.connection.media == "text":
                    self._leave_message()
            elif self.brain is not None:
                timing = turns.heard(event)
                self._start(lambda r: self._answer(r, event.ended_at, timing, event.text))

    def _start(self, line: Line, opening: bool = False) -> Reply:
        # The line is open from now, not from when the task first runs: a caller turn that
        # arrives before then supersedes it too.
        reply = Reply(opening=opening)
        reply.task = asyncio.create_task(line(reply))
        self._reply = reply
        return reply

    async def _settle(self) -> None:
        """Let a finished line's reply task complete its bookkeeping."""
        reply = self._reply
        if reply is not None and reply.task is not None and not reply.task.done():
            with contextlib.suppress(asyncio.CancelledError):
                await reply.task

    async def _barge_in(self, reply: Reply) -> None:
        generating = reply.generating
        await self.speaker.interrupt(reply)
        if generating:
            if reply.task is not None and not reply.task.done():
                reply.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reply.task
            self._close_line(reply, None)  # when cancelled before it ran, nobody closed it
        elif reply.entry is not None:
            # The line was already recorded whole, while its audio was still playing.
            if reply.text:
                self.transcript.history.retext(reply.entry, reply.text)
            else:
                self.transcript.history.remove(reply.entry)
            reply.entry = None

    # A reply: one spoken line.

    async def _say_line(self, reply: Reply, text: str, then_end: str | None = None) -> None:
        try:
            if text:
                await self.speaker.say(reply, text)
                await self.speaker.end_line(reply)
        finally:
            self._close_line(reply, None)
        await self._after_line(reply, then_end)

    async def _answer(
        self,
        reply: Reply,
        caller_ended_at: float | None,
        timing: turns.TurnTiming | None = None,
        heard: str | None = None,
    ) -> None:
        """The brain's answer; when it asks for tools, they run (all at once), their results go
        back and the brain answers again, in a new line (``follow``) on the same task."""
        if heard is not None:
            await self._consult(heard)
        rounds = 0
        while True:
            calls = await self._generate(reply, caller_ended_at, rounds < MAX_TOOL_ROUNDS, timing)
            rounds += 1
            if calls is None:
                return  # the brain failed: apologised, hung up
            if not calls:
                await self._after_line(reply, None)
                return
            if reply.first_media_at is not None:
                # The turn's latency was measured on this line.
                caller_ended_at, timing = None, None
            follow = Reply()
            follow.task = reply.task
            self._reply = follow
            uses = await self._use_tools(follow, calls, caller_ended_at)
            ending = next((use.end_call for use in uses if use.end_call), None)
            if ending is not None:
                self._close_line(follow, None)
                if not reply.interrupted and not follow.interrupted:
                    self._ending = True
                    await reply.wait_for_playout()
                    await follow.wait_for_playout()
                    await self._end_call(ending)
                return
            if follow.first_media_at is not None:
                caller_ended_at, timing = None, None
            reply = follow

    async def _generate(
        self,
        reply: Reply,
        caller_ended_at: float | None,
        offer_tools: bool,
        timing: turns.TurnTiming | None = None,
    ) -> list[ToolCall] | None:
        """One brain request, spoken into ``reply`` and recorded; the tools it asked for
        (recorded too), or None when the brain failed."""
        assert self.brain is not None and self.toolbox is not None
        messages = self.transcript.messages(self.spec.prompt)
        tools = self.toolbox.definitions() if offer_tools else []
        stream: asyncio.Queue[ReplyEvent | BrainError | None] = asyncio.Queue()
        thinking = asyncio.create_task(_think(self.brain, self.spec, messages, tools, stream))
        # Nothing said yet on this line: its first words may go ahead of their sentence.
        splitter = SentenceSplitter(opening_clause=not reply.sentences)
        tool_calls: list[ToolCall] = []
        try:
            while (item := await stream.get()) is not None:
                if isinstance(item, BrainError):
                    raise item
                if isinstance(item, TextDelta):
                    turns.token(timing)
                    for sentence in splitter.feed(item.text):
                        await self.speaker.say(reply, sentence)
                else:
                    tool_calls.append(item)
            if rest := splitter.flush():
                await self.speaker.say(reply, rest)
            await self.speaker.end_line(reply)
        except BrainError as exc:
            await self._apologise(reply, exc)
            return None
        finally:
            thinking.cancel()
            self._close_line(reply, caller_ended_at)
        if not offer_tools and tool_calls:
            # Tools were not offered this time: what was said stands, the calls are dropped.
            log.warning("the brain asked for tools it was not offered; ignored")
            return []
        now = time.monotonic()
        calls = [self.transcript.call(now, call) for call in tool_calls]
        await turns.report(timing, reply.first_media_at, self.transcript.elapsed, self.report)
        return calls

    async def _use_tools(
        self, follow: Reply, calls: list[ToolCall], caller_ended_at: float | None
    ) -> list[ToolUse]:
        """Every call at once; a line to hold the caller if none has answered within a
        second; each use recorded (transcript, ``tool.called``) as it is answered. A barge-in
        cancels the uses still running: they are recorded as interrupted."""
        assert self.toolbox is not None and self.tool_context is not None
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

    async def _say_for_tool(self, line: str) -> None:
        """A tool's line to the caller (a transfer's message), heard before the tool goes on."""
        said = Reply()
        await self.speaker.say(said, line)
        await self.speaker.end_line(said)
        self._close_line(said, None)
        await said.wait_for_playout()

    async def _say_hold(self, line: str, caller_ended_at: float | None) -> None:
        hold = Reply()
        await self.speaker.say(hold, line)
        await self.speaker.end_line(hold)
        self._close_line(hold, caller_ended_at)

    async def _record_use(self, use: ToolUse) -> None:
        self.transcript.answer(time.monotonic(), use.call, use.text)
        self._report_later("tool.called", use.event())

    async def _consult(self, heard: str) -> None:
        """``knowledge.auto``: the caller's words looked up before the brain is asked; what was
        found goes into the history as a ``knowledge_search`` call and its answer (the brain
        reads it, the transcript shows it) and into an ``agent.knowledge`` event. A search
        that fails or is slow is left out: the reply never waits long on it."""
        context = self.tool_context
        if not knowledge.auto_enabled(self.spec.knowledge) or context is None:
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
        cancel the write (``run`` waits for them before the call ends)."""
        job = asyncio.create_task(self._report_quietly(type_, data))
        self._background.add(job)
        job.add_done_callback(self._background.discard)

    async def _report_quietly(self, type_: str, data: dict[str, Any]) -> None:
        try:
            await self.report(type_, data)
        except Exception:
            log.exception("could not record the event %s", type_)

    async def _after_line(self, reply: Reply, then_end: str | None) -> None:
        if then_end is None and reply.text and self.spec.ends_the_call(reply.text):
            then_end = AGENT_HANGUP
        if then_end is not None and not reply.interrupted:
            self._ending = True
            await reply.wait_for_playout()
            await self._end_call(then_end)

    def _close_line(self, reply: Reply, caller_ended_at: float | None) -> None:
        if not reply.generating:
            return
        reply.generated()
        first_media_at = reply.first_media_at
        if first_media_at is not None and caller_ended_at is not None:
            self.latencies.append(first_media_at - caller_ended_at)
        if reply.text:
            # When the caller began hearing it: a line queued behind another (the opening
            # behind the disclosure) is heard only once that one has been.
            at = first_media_at or time.monotonic()
            if reply.sentences:
                at = max(at, reply.sentences[0][0])
            reply.entry = self.transcript.say(at, "assistant", reply.text)

    async def _close_for_silence(self) -> None:
        self._ending = True
        with contextlib.suppress(Exception):
            await self.report(
                "agent.silence_timeout", {"seconds": self.spec.silence_timeout_seconds}
            )
        self._start(lambda r: self._say_line(r, CLOSING_LINE, then_end=SILENCE))

    async def _apologise(self, reply: Reply, error: BrainError) -> None:
        log.warning("the brain failed; apologising and hanging up", extra={"error": str(error)})
        self._ending = True
        metrics.count_brain_error(error)
        with contextlib.suppress(Exception):
            await self.report("agent.brain_error", {"error": str(error)})
        await self.speaker.say(reply, APOLOGY)
        await self.speaker.end_line(reply)
        self._close_line(reply, None)
        await self._end_call(AGENT_HANGUP)

    async def _end_call(self, reason: str) -> None:
        self._ending = True
        self._reason = reason
        await self.speaker.finish()
        if not self.connection.handed_over:  # a warm transfer's bridge holds the call on
            await self.connection.hangup()


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
    else:
        out.put_nowait(None)
