"""Fakes that drive the real ``TurnLoop`` in milliseconds (livekit's ``tests/fake_llm.py``,
pipecat's ``run_test``): a phone line, a brain, a transcriber, a synthesizer and a turn detector.

The real ``Listener`` and ``Speaker`` run in between. The caller's "audio" carries its words:
a frame ``B`` starts speech, a frame ``E<text>`` ends the turn, and the fake transcriber reads
the text back out of the turn's audio. The fake synthesizer makes a millisecond of silence per
character, so a line is "heard" for as long as the test wants.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from callplane.brain import Brain, BrainError, ReplyEvent, TextDelta, ToolCall
from callplane.engine.agent import AgentSpec
from callplane.engine.conversation.listening import Listener
from callplane.engine.conversation.speaking import Speaker
from callplane.engine.conversation.turn_loop import TranscriptLog, TurnLoop
from callplane.speech.base import Segment, Synthesizer, Transcriber
from callplane.speech.vad import SpeechPaused, SpeechStarted, TurnEnded, TurnEvent
from callplane.telephony.base import (
    SAMPLE_RATE,
    SAMPLE_WIDTH,
    AudioFrame,
    Connection,
    EndedBy,
    Frame,
    TextFrame,
)
from callplane.tools import ToolContext
from callplane.tools.toolbox import Toolbox

#: Bounds every wait of a test: a regression hangs for this long, then fails.
PATIENCE = 5.0


class ListeningLine(Connection):
    """A line whose far end only speaks (``frames``, a subclass's): the agent's audio goes
    nowhere, and the call ends from the far end. For tests of one part of the engine."""

    def __init__(self) -> None:
        super().__init__(media="audio")

    async def frames(self) -> AsyncIterator[Frame]:
        return
        yield

    async def play(self, frame: Frame) -> None:
        pass

    async def interrupt(self) -> None:
        pass

    async def hangup(self) -> None:
        pass

    async def wait_ended(self) -> EndedBy:
        return "remote"


class FakeConnection(Connection):
    def __init__(self, answered_by: Any = "human", media: Any = "audio") -> None:
        super().__init__(media=media, answered_by=answered_by)
        self._incoming: asyncio.Queue[Frame | None] = asyncio.Queue()
        self._ended = asyncio.Event()
        #: (when, frame) of everything the agent played.
        self.played: list[tuple[float, Frame]] = []
        self.interruptions = 0
        self.dtmf: list[str] = []
        self.hung_up_at: float | None = None

    def send(self, pcm: bytes) -> None:
        self._incoming.put_nowait(AudioFrame(pcm))

    def send_text(self, text: str) -> None:
        self._incoming.put_nowait(TextFrame(text))

    def remote_hangup(self) -> None:
        self._end("remote")

    def _end(self, by: EndedBy) -> None:
        if self._ended.is_set():
            return
        self.ended_by = by
        self.hung_up_at = time.monotonic()
        self._ended.set()
        self._incoming.put_nowait(None)

    async def frames(self) -> AsyncIterator[Frame]:
        while (frame := await self._incoming.get()) is not None:
            yield frame

    async def play(self, frame: Frame) -> None:
        if not self._ended.is_set():
            self.played.append((time.monotonic(), frame))

    async def interrupt(self) -> None:
        self.interruptions += 1

    async def send_dtmf(self, digits: str) -> None:
        self.dtmf.append(digits)

    async def hangup(self) -> None:
        self._end("local")

    async def wait_ended(self) -> EndedBy:
        await self._ended.wait()
        assert self.ended_by is not None
        return self.ended_by


class FakeDetector:
    """The turn detector, reading the caller's marked frames instead of voice activity: ``B``
    speech starts, ``~V<ms>`` that much more voice, ``~P<text>`` a pause after ``text``,
    ``E<text>`` the turn ends."""

    def __init__(self) -> None:
        self.voiced_ms = 0
        self.silent_ms = 0

    def push(self, pcm: bytes) -> list[TurnEvent]:
        if pcm.startswith(b"B"):
            self.voiced_ms = self.silent_ms = 0
            return [SpeechStarted()]
        if pcm.startswith(b"~V"):
            if self.silent_ms:
                self.voiced_ms = self.silent_ms = 0  # a new stretch after the pause
            self.voiced_ms += int(pcm[2:])
            return []
        if pcm.startswith(b"~P"):
            self.silent_ms = 120
            return [SpeechPaused(audio=pcm[2:])]
        if pcm.startswith(b"E"):
            self.voiced_ms = self.silent_ms = 0
            return [TurnEnded(audio=pcm[1:], silence_seconds=0.0)]
        return []


class FakeTranscriber(Transcriber):
    def __init__(self) -> None:
        self.hints: list[tuple[str, ...]] = []

    def transcribe(
        self,
        pcm: bytes,
        sample_rate: int,
        *,
        hints: Sequence[str] = (),
        abandoned: threading.Event | None = None,
    ) -> list[Segment]:
        self.hints.append(tuple(hints))
        text = pcm.decode()
        return [Segment(text=text, start=0.0, end=0.1, confidence=1.0)] if text else []


class FakeSynthesizer(Synthesizer):
    def __init__(self, ms_per_char: float = 1.0) -> None:
        self.ms_per_char = ms_per_char
        self.spoken: list[str] = []

    def synthesize(self, text: str, sample_rate: int) -> bytes:
        self.spoken.append(text)
        samples = max(1, int(len(text) * self.ms_per_char * sample_rate / 1000))
        return bytes(samples * SAMPLE_WIDTH)


@dataclass
class FakeBrain:
    """Answers each turn with the next scripted reply: text (streamed word by word), a list of
    events (an ``asyncio.Event`` in it holds the stream until it is set), or a
    ``BrainError``; ``delay`` before the first token."""

    replies: list[str | list[ReplyEvent | asyncio.Event] | BrainError] = field(default_factory=list)
    delay: float = 0.0
    #: (messages, model, temperature) of every request.
    requests: list[tuple[list[dict[str, Any]], str | None, float | None]] = field(
        default_factory=list
    )
    closed: bool = False
    #: The tool names offered with every ``stream_reply`` request.
    offered: list[list[str]] = field(default_factory=list)

    async def complete(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        model: str | None = None,
        temperature: float | None = None,
    ) -> str:
        self.requests.append((list(messages), model, temperature))
        return "A summary."

    async def stream_reply(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[dict[str, Any]] = (),
        model: str | None = None,
        temperature: float | None = None,
    ) -> AsyncIterator[ReplyEvent]:
        self.requests.append((list(messages), model, temperature))
        self.offered.append([tool["function"]["name"] for tool in tools])
        reply = self.replies.pop(0) if self.replies else "Okay."
        if self.delay:
            await asyncio.sleep(self.delay)
        if isinstance(reply, BrainError):
            raise reply
        if isinstance(reply, str):
            for word in reply.split(" "):
                yield TextDelta(word + " ")
                await asyncio.sleep(0)
            return
        for event in reply:
            if isinstance(event, asyncio.Event):
                await event.wait()
            else:
                yield event

    async def aclose(self) -> None:
        self.closed = True


def end_call(text: str) -> list[ReplyEvent]:
    """A reply that says ``text`` and then asks to hang up."""
    return [TextDelta(text), ToolCall("end_call", {"reason": "done"})]


@dataclass
class Conversation:
    """One conversation on the fakes: start it, act as the caller, await its end."""

    spec: AgentSpec = field(default_factory=AgentSpec)
    brain: Brain | None = None
    answered_by: str = "human"
    ms_per_char: float = 1.0
    #: The listener tells its pauses' guesses (a speculative reply starts on them).
    speculative: bool = False
    #: ``text``: the caller's turns and the agent's lines are whole texts, as on the simulated
    #: network (nothing is synthesised, a line takes no time to be heard).
    media: str = "audio"
    connection: FakeConnection = field(init=False)
    synthesizer: FakeSynthesizer = field(init=False)
    transcriber: FakeTranscriber = field(init=False)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    #: The agent's tools (default: built from ``spec.tools``) and what they may reach.
    toolbox: Toolbox | None = None
    tool_context: ToolContext | None = None
    _task: asyncio.Task[str] | None = None

    def __post_init__(self) -> None:
        self.connection = FakeConnection(self.answered_by, self.media)
        self.synthesizer = FakeSynthesizer(self.ms_per_char)
        self.transcriber = FakeTranscriber()

    def start(self) -> Conversation:
        began = time.monotonic()

        async def report(type_: str, data: dict[str, Any]) -> None:
            self.events.append((type_, data))

        loop = TurnLoop(
            connection=self.connection,
            listener=Listener(
                self.connection,
                transcriber=self.transcriber,
                hints=self.spec.keyterms,
                detector=FakeDetector,
                tell_guesses=self.speculative,
            ),
            speaker=Speaker(self.connection, self.synthesizer),
            transcript=TranscriptLog(self.transcript, lambda: time.monotonic() - began),
            spec=self.spec,
            brain=self.brain,
            report=report,
            answered_by=self.answered_by,
            latencies=self.latencies,
            toolbox=self.toolbox,
            tool_context=self.tool_context,
        )
        self._task = asyncio.create_task(loop.run())
        return self

    # The caller.

    def begins_speaking(self) -> None:
        self.connection.send(b"B")

    def says(self, text: str) -> None:
        if self.media == "text":
            self.connection.send_text(text)
            return
        self.connection.send(b"B")
        self.connection.send(b"E" + text.encode())

    def voices(self, ms: int) -> None:
        """More of the caller's voice (its words come with the pause or the end after it)."""
        self.connection.send(b"~V%d" % ms)

    def pauses(self, text: str) -> None:
        """A pause after the caller said ``text`` (the turn so far)."""
        self.connection.send(b"~P" + text.encode())

    def ends_turn(self, text: str) -> None:
        self.connection.send(b"E" + text.encode())

    def hangs_up(self) -> None:
        self.connection.remote_hangup()

    # Waiting.

    async def ended(self) -> str:
        assert self._task is not None
        return await asyncio.wait_for(asyncio.shield(self._task), PATIENCE)

    async def until(self, condition: Any) -> None:
        """Until ``condition()`` holds (polled; bounded by PATIENCE)."""
        deadline = time.monotonic() + PATIENCE
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError("the conversation never got there")
            await asyncio.sleep(0.002)

    def lines(self, role: str = "assistant") -> list[str]:
        return [e["text"] for e in self.transcript if e["role"] == role and e.get("text")]

    def audio_seconds(self) -> float:
        return sum(len(f.pcm) for _, f in self.connection.played if isinstance(f, AudioFrame)) / (
            SAMPLE_RATE * SAMPLE_WIDTH
        )
