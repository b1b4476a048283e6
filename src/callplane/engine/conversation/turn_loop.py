"""The turn loop (docs/engine-core.md, docs/agents.md): the caller speaks, the brain answers, the
agent speaks.

Three parts run at once, after pipecat's and livekit-agents' split of a voice pipeline:

    Listener (listening.py)   media in -> CallerSpeaking / CallerSaid / CallerGone
    TurnLoop (here)           decides: record the turn, start a reply, barge in, hang up
    reply task                brain stream and tools (generation.py) -> sentences -> Speaker
                              (speaking.py) -> media out

Each agent line is a ``Reply`` (reply.py): what was queued and heard of it, whether it was cut
off, and a way to wait until it has been heard. A reply streams from the brain in its own task,
so generation never waits for playback, and the first sentence is spoken as soon as it is
complete. The caller speaking while the agent generates or speaks is a barge-in: playback
stops, the reply is cancelled, and what the caller heard of it is what the transcript keeps.
Over a line being heard, the caller's first sound only holds it (``Speaker.hold``): a
backchannel ("uh-huh", ``backchannel.py``) lets it play on from where it stopped, recorded as a
backchannel and never answered; longer voice, or other words, cut it there.

The agent (``AgentSpec``, agent.py) decides the rest: its prompt, opening, model; the call
ends when the brain asks ``end_call`` or a line holds an end-call phrase (once the line has
been heard), at the maximum length, after a silence (with a closing line), or at a voicemail
(hung up at once, or once a message left after the greeting's beep or the quiet after it). A
brain that fails or times out gets a short apology and a hang-up — the call ends ``completed``,
never hung — and an event saying why (one busy or unreachable brain is asked again first, in
``generation.py``). The agent's disclosure, if it has one, is said before anything else and no
barge-in cuts it off (docs/answering-machines.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from callplane.brain import Brain, BrainError
from callplane.brain.history import Said
from callplane.engine.agent import AgentSpec
from callplane.engine.conversation.backchannel import is_backchannel
from callplane.engine.conversation.generation import Generation, Report
from callplane.engine.conversation.language import CallLanguage
from callplane.engine.conversation.listening import (
    CallerEvent,
    CallerGone,
    CallerKeptSpeaking,
    CallerPaused,
    CallerSaid,
    CallerSpeaking,
    LikelyTurnEnd,
    Listener,
    TurnResumed,
)
from callplane.engine.conversation.reply import Reply
from callplane.engine.conversation.speaking import Speaker
from callplane.engine.conversation.transcript import TranscriptLog
from callplane.observability import metrics, turns
from callplane.speech.answering import GreetingEnd
from callplane.telephony.base import Connection
from callplane.tools import ToolContext
from callplane.tools.opt_out import GOODBYE as OPT_OUT_GOODBYE
from callplane.tools.opt_out import OPTED_OUT, opt_out
from callplane.tools.toolbox import Toolbox

__all__ = ["Report", "TranscriptLog", "TurnLoop"]

log = logging.getLogger("callplane.engine.turns")

APOLOGY = "I'm sorry, I'm having trouble right now. Please call back later. Goodbye."
CLOSING_LINE = "I haven't heard anything for a while, so I'll end the call now. Goodbye."

#: Why a conversation ended (the ``reason`` of ``call.ended``).
REMOTE_HANGUP = "the far end hung up"
AGENT_HANGUP = "the agent hung up"
MAX_LENGTH = "maximum call length reached"
SILENCE = "the caller was silent"
VOICEMAIL = "the agent hung up on a voicemail"

#: A line to say, into the reply it is given.
Line = Callable[[Reply], Coroutine[Any, Any, None]]

#: A line held at the caller's first sound plays on after this long if their words are still
#: not known (recognition on a busy worker); they still cut it if they are not a backchannel.
HOLD_LIMIT_SECONDS = 1.5
#: A backchannel word over the last this-many seconds of a finished line is an answer to it
#: ("...shall I book it?" "Yes."): the line's end is cut and the caller answered.
LAST_WORDS_SECONDS = 1.0


@dataclass(frozen=True)
class GreetingOver:
    """A voicemail's greeting has ended (its beep, or quiet after it): record the message."""


@dataclass(eq=False)
class _Hold:
    """The agent's line, stopped at the caller's first sound until it is known whether they
    are interrupting or only saying "uh-huh" (``backchannel.py``)."""

    reply: Reply
    timer: asyncio.TimerHandle | None = None
    #: Played on at the limit, while the caller's words are still awaited.
    playing_on: bool = False


@dataclass(frozen=True)
class HoldOver:
    """A hold has lasted ``HOLD_LIMIT_SECONDS``."""

    hold: _Hold


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
    _inbox: asyncio.Queue[CallerEvent | GreetingOver | HoldOver] = field(
        default_factory=asyncio.Queue
    )
    _getting: asyncio.Future[CallerEvent | GreetingOver | HoldOver] | None = None
    #: The agent's current (or last) line.
    _reply: Reply | None = None
    #: Set once the agent is ending the call: the caller's speech no longer matters.
    _ending: bool = False
    _reason: str | None = None
    #: Waiting for a voicemail greeting to end, to leave the message.
    _awaiting_greeting: bool = False
    #: The disclosure line, once begun: while it is being heard, no barge-in.
    _disclosure: Reply | None = None
    #: The line held while the caller's sound is weighed.
    _hold: _Hold | None = None
    #: Caller turns (by ``started_at``) heard as backchannels, with their transcript entry.
    _backchannels: dict[float, Said] = field(default_factory=dict)
    #: When the caller last did anything (the silence timeout counts from here or from the
    #: end of the agent's line, whichever is later).
    _last_heard: float = 0.0
    #: When the agent last finished a line: a text line (the simulated network) is heard the
    #: moment it is sent, so its playout says nothing of when the caller's turn to speak began.
    _line_done_at: float = 0.0
    #: What tools may reach on this call (None: tools run with the connection alone).
    tool_context: ToolContext | None = None
    #: The agent's tools (built from ``spec.tools`` when not given).
    toolbox: Toolbox | None = None
    #: The brain's answers and tool rounds (None without a brain).
    _generation: Generation | None = None
    #: The call's language (None: the agent's, for good); ``on_language`` makes the voice
    #: follow a change.
    language: CallLanguage | None = None
    on_language: Callable[[AgentSpec], Awaitable[None]] | None = None

    def __post_init__(self) -> None:
        if self.toolbox is None:
            self.toolbox = Toolbox.from_configs(self.spec.tools)
        if self.tool_context is None:
            self.tool_context = ToolContext(connection=self.connection)
        if self.brain is not None:
            self._generation = Generation(
                lines=self,
                speaker=self.speaker,
                transcript=self.transcript,
                spec=self.spec,
                brain=self.brain,
                toolbox=self.toolbox,
                tool_context=self.tool_context,
                report=self.report,
            )

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
            self._drop_hold()
            tasks = [self._reply.task if self._reply else None, listening, self._getting]
            for task in tasks:
                if task is not None and not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            if self._generation is not None:
                await self._generation.settle()
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

    async def _next_event(self) -> CallerEvent | GreetingOver | HoldOver | None:
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
        return max(self._last_heard, self._line_done_at, heard_until) + seconds

    async def _on(self, event: CallerEvent | GreetingOver | HoldOver) -> None:
        if isinstance(event, HoldOver):
            if event.hold is self._hold and not event.hold.playing_on:
                event.hold.playing_on = True
                await self.speaker.resume(event.hold.reply)
            return
        if self._ending:
            if self._hold is not None:
                await self._release(self._hold)  # a closing line is not cut off
            if isinstance(event, CallerSaid) and self.answered_by == "voicemail":
                # The greeting's words, recognised after the message began: still kept.
                self.transcript.say(event.started_at, "user", event.text, event.ended_at)
            return
        self._last_heard = time.monotonic()
        reply = self._reply
        if isinstance(event, GreetingOver):
            if self._awaiting_greeting:
                self._leave_message()
            return
        if isinstance(event, LikelyTurnEnd | TurnResumed):
            self._guessed(event)
            return
        disclosure = self._disclosure
        if disclosure is not None and (disclosure.generating or disclosure.playing):
            reply = None  # nothing the caller does cuts the disclosure off, nor what follows it
        if isinstance(event, CallerSpeaking):
            if reply is not None and reply.heard_since(event.at):
                await self._hold_or_cut(reply)
            return
        if isinstance(event, CallerKeptSpeaking):
            if self._hold is not None:
                await self._cut(self._hold)
            return
        if isinstance(event, CallerPaused):
            await self._weigh(event)
            return
        if isinstance(event, CallerSaid):
            if await self._backchannel(event):
                return
            # A new caller turn supersedes an answer not yet complete (the brain answers both
            # together), and interrupts whatever the caller spoke over; the opening line is
            # not an answer to anything, so it is finished first.
            if reply is not None and (
                reply.heard_since(event.started_at) or (reply.generating and not reply.opening)
            ):
                await self._barge_in(reply)
            await self._settle()
            if self.language is not None:
                heard = self.language.heard(event.text)
                if heard is not None:
                    await self.use_language(heard)
            self.transcript.say(event.started_at, "user", event.text, event.ended_at)
            if not self._awaiting_greeting and self.spec.opts_out(event.text):
                self._opt_out()
                return
            if self._awaiting_greeting:
                # Audio: the greeting ends at its beep or after quiet (``GreetingOver``); a
                # text line has only the greeting's words to go by.
                if self.connection.media == "text":
                    self._leave_message()
            elif self.brain is not None:
                timing = turns.heard(event)
                self._start(lambda r: self._answer(r, event.ended_at, timing, event.text))

    def _guessed(self, event: LikelyTurnEnd | TurnResumed) -> None:
        """A speculative reply (``speculation.py``) on the pause's words, when the agent is
        quiet; dropped when the caller goes on. (A turn spoken over the agent's line changes
        that line in the transcript first: an answer asked before would never fit.)"""
        if self._generation is None:
            return
        reply = self._reply
        quiet = reply is None or not (reply.generating or reply.playing)
        if isinstance(event, LikelyTurnEnd) and quiet and not self._awaiting_greeting:
            self._generation.speculate(event.text, event.started_at)
        else:
            self._generation.drop_speculation()

    async def use_language(self, language: str) -> bool:
        """Speak ``language`` from now on (its preset, voice and recogniser); False when the
        call is in it already."""
        if self.language is None or not self.language.switch(language):
            return False
        self.spec = self.language.spec()
        if self._generation is not None:
            self._generation.spec = self.spec
        if self.on_language is not None:
            await self.on_language(self.spec)
        return True

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

    # Backchannels: the caller's sound over the agent's line is weighed before it cuts it.

    async def _hold_or_cut(self, reply: Reply) -> None:
        """The caller began to speak over ``reply``: stop its audio at once, and cut it or play
        it on once their sound is known; a line that cannot be held is cut now."""
        hold = self._hold
        if hold is not None and hold.reply is reply:
            if hold.playing_on and await self.speaker.hold(reply):
                hold.playing_on = False  # more sound: stopped again, still weighed
            return
        self._drop_hold()
        if not await self.speaker.hold(reply):
            await self._barge_in(reply)
            return
        hold = self._hold = _Hold(reply)
        loop = asyncio.get_running_loop()
        hold.timer = loop.call_later(HOLD_LIMIT_SECONDS, self._inbox.put_nowait, HoldOver(hold))

    async def _weigh(self, paused: CallerPaused) -> None:
        """A short stretch of the caller's voice, with its words: a backchannel (or no words
        at all) lets the held line play on; anything else cuts it."""
        hold = self._hold
        if hold is None:
            return
        if is_backchannel(paused.text) and not self._answers(hold):
            self._note_backchannel(paused.started_at, paused.text)
        elif paused.text.strip():
            await self._cut(hold)
            return
        await self._release(hold)

    def _note_backchannel(self, started_at: float, text: str) -> None:
        said = self._backchannels.get(started_at)
        if said is not None:
            self.transcript.history.retext(said, text)
        else:
            said = self.transcript.say(started_at, "user", text, backchannel=True)
            self._backchannels[started_at] = said

    async def _backchannel(self, event: CallerSaid) -> bool:
        """The turn was a backchannel: recorded as one, not answered. A turn that began as
        one and went on ("uh-huh, but what about Friday?") is a turn like any other."""
        said = self._backchannels.pop(event.started_at, None)
        hold = self._hold
        if hold is not None and said is None and self._answers(hold):
            return False
        if is_backchannel(event.text) and (said is not None or hold is not None):
            if said is not None:
                self.transcript.history.retext(said, event.text)
            else:
                self.transcript.say(event.started_at, "user", event.text, backchannel=True)
            if hold is not None:
                await self._release(hold)
            return True
        if said is not None:
            self.transcript.history.remove(said)  # the whole turn is recorded instead
        return False

    def _answers(self, hold: _Hold) -> bool:
        """Whether the caller's sound came over the very end of the line: then even "yes" or
        "okay" is their answer to it, not a backchannel."""
        line = hold.reply
        if line.generating:
            return False
        # Played on at the hold's limit, the line's own clock says what is left of it.
        left = self.speaker.held_seconds if line.held else line.playout_ends_at - time.monotonic()
        return left < LAST_WORDS_SECONDS

    async def _cut(self, hold: _Hold) -> None:
        """Cut the held line off where it was held, and the line that followed it while it was
        (after a tool call: the same generation), which is cut first, to stop generating."""
        current = self._reply
        if current is not None and current is not hold.reply and current.task is hold.reply.task:
            await self._barge_in(current)
        await self._barge_in(hold.reply)

    async def _release(self, hold: _Hold) -> None:
        self._drop_hold()
        await self.speaker.resume(hold.reply)

    def _drop_hold(self) -> None:
        hold, self._hold = self._hold, None
        if hold is not None and hold.timer is not None:
            hold.timer.cancel()

    async def _barge_in(self, reply: Reply) -> None:
        self._drop_hold()
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
        """The brain's answer (``generation.py``: its requests and tool rounds); then what the
        answer's last line decides: the call ends after it, or the conversation goes on."""
        assert self._generation is not None
        answered = await self._generation.answer(reply, caller_ended_at, timing, heard)
        if answered.failed:
            return  # apologised, hung up
        last = answered.reply
        if answered.end_call is None:
            await self._after_line(last, None)
        elif not answered.previous.interrupted and not last.interrupted:
            self._ending = True
            await answered.previous.wait_for_playout()
            await last.wait_for_playout()
            await self._end_call(answered.end_call)

    # What generation asks of the conversation (``generation.Lines``).

    def follow(self, reply: Reply) -> Reply:
        follow = Reply()
        follow.task = reply.task
        self._reply = follow
        return follow

    def close_line(self, reply: Reply, caller_ended_at: float | None) -> None:
        self._close_line(reply, caller_ended_at)

    async def apologise(self, reply: Reply, error: BrainError) -> None:
        await self._apologise(reply, error)

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
        self._line_done_at = time.monotonic()
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

    def _opt_out(self) -> None:
        """The caller said they do not want to be called again: listed, a goodbye, the end
        (as the ``opt_out`` tool does, whatever the brain would have answered)."""
        self._ending = True

        async def line(reply: Reply) -> None:
            try:
                await opt_out(self.tool_context or ToolContext(connection=self.connection))
            except Exception:
                log.exception("could not put the caller's number on the do-not-call list")
            await self._say_line(reply, OPT_OUT_GOODBYE, then_end=OPTED_OUT)

        self._start(line)

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
