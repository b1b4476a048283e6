"""Agent tests in audio mode (docs/agent-tests.md): each caller line is spoken into the same
listener, end of turn and recogniser a phone call uses, and the agent's audio is recognised back.

The caller is a line (``ScriptedCaller``) that says each line in real time, then stays silent
while the agent answers; the agent runs the phone call's own ``TurnLoop`` on it, with the test's
mocks as its tools. A reply's latency runs from the caller's last voiced frame to the reply's
first frame; once the reply has been quiet for ``REPLY_QUIET_SECONDS`` the next line is said.
"""

from __future__ import annotations

import asyncio
import time
from array import array
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import orjson

from callplane.agent_tests.judge import caller_line
from callplane.agent_tests.playing import Played
from callplane.agents.text_tools import MOCKED
from callplane.agents.variables import VariableSources, render
from callplane.brain.base import Brain, ToolCall
from callplane.engine.agent import resolve_agent_spec
from callplane.engine.conversation.endpointing import Endpointing
from callplane.engine.conversation.listening import Listener
from callplane.engine.conversation.speaking import Speaker
from callplane.engine.conversation.turn_loop import AGENT_HANGUP, TranscriptLog, TurnLoop
from callplane.privacy.redaction import Redactor
from callplane.runtime import Runtime
from callplane.speech.base import Synthesizer, Transcriber
from callplane.speech.engines import shared_synthesizers
from callplane.speech.transcriber import shared_transcriber
from callplane.telephony.base import (
    FRAME_BYTES,
    SAMPLE_RATE,
    AudioFrame,
    Connection,
    EndedBy,
    Frame,
)
from callplane.tools import ToolContext
from callplane.tools.toolbox import Toolbox, ToolUse

#: The reply is over once the agent has been quiet this long.
REPLY_QUIET_SECONDS = 1.0
#: A caller line the agent does not answer within this long ends the conversation.
NO_REPLY_SECONDS = 20.0


class _NoCallFields:
    call_prompt = first_message = agent_speaks_first = voice_uuid = language = None
    keyterms: tuple[str, ...] = ()
    analyzers: tuple[Any, ...] = ()


class MockedToolbox(Toolbox):
    """The commit's tools as the brain sees them, answering the test's mocks; ``end_call``
    still ends the call."""

    def __init__(self, tools: Toolbox, mocks: Mapping[str, Any]) -> None:
        self.tools = tools.tools
        self._validators = tools._validators
        self.mocks = mocks

    async def use(self, call: ToolCall, context: ToolContext) -> ToolUse:
        if call.name == "end_call":
            return await super().use(call, context)
        text = orjson.dumps(self.mocks[call.name]).decode() if call.name in self.mocks else MOCKED
        return ToolUse(call, text, "ok", 0.0)


def _trim(pcm: bytes) -> bytes:
    """Without the synthesizer's trailing silence: the line ends at its last voiced sample."""
    samples = array("h", pcm)
    end = len(samples)
    while end > 0 and abs(samples[end - 1]) < 300:
        end -= 1
    return samples[:end].tobytes()


class ScriptedCaller(Connection):
    def __init__(self, next_line: Callable[[], Awaitable[bytes | None]], *, opening: bool) -> None:
        super().__init__(media="audio")
        self._opening = opening
        self._next_line = next_line
        self._ended = asyncio.Event()
        self.spoke_until: list[float] = []
        self.replies: list[bytearray] = [bytearray()]  # the opening, before any caller line
        self.reply_began: list[float | None] = [None]
        self._last_played = 0.0

    async def frames(self) -> AsyncIterator[Frame]:
        silence = bytes(FRAME_BYTES)
        clock = time.monotonic()

        async def tick() -> AudioFrame:
            nonlocal clock
            clock += 0.02
            await asyncio.sleep(max(0.0, clock - time.monotonic()))
            return AudioFrame(silence)

        # The opening: wait while the agent greets.
        started = time.monotonic()
        while self._opening and not self._ended.is_set() and not self._quiet():
            if self.reply_began[-1] is None and time.monotonic() - started > NO_REPLY_SECONDS:
                break
            yield await tick()
        while not self._ended.is_set():
            pcm = await self._next_line()
            if pcm is None:
                break
            clock = max(clock, time.monotonic())
            for offset in range(0, len(pcm), FRAME_BYTES):
                clock += 0.02
                await asyncio.sleep(max(0.0, clock - time.monotonic()))
                yield AudioFrame(pcm[offset : offset + FRAME_BYTES].ljust(FRAME_BYTES, b"\0"))
            self.spoke_until.append(time.monotonic())
            self.replies.append(bytearray())
            self.reply_began.append(None)
            asked = time.monotonic()
            while not self._ended.is_set():
                if self.reply_began[-1] is None and time.monotonic() - asked > NO_REPLY_SECONDS:
                    break
                if self.reply_began[-1] is not None and self._quiet():
                    break
                yield await tick()
        self._ended.set()

    def _quiet(self) -> bool:
        """The current reply began and has been silent long enough to be over."""
        if self.reply_began[-1] is None:
            return False
        return time.monotonic() - self._last_played > REPLY_QUIET_SECONDS

    async def play(self, frame: Frame) -> None:
        if isinstance(frame, AudioFrame):
            now = time.monotonic()
            if self.reply_began[-1] is None:
                self.reply_began[-1] = now
            self._last_played = now
            self.replies[-1].extend(frame.pcm)

    async def interrupt(self) -> None:
        return None

    async def hangup(self) -> None:
        self._ended.set()

    async def wait_ended(self) -> EndedBy:
        await self._ended.wait()
        return "remote"


def _heard(transcriber: Transcriber, pcm: bytes) -> str:
    if not pcm:
        return ""
    segments = transcriber.transcribe(pcm, SAMPLE_RATE)
    return " ".join(s.text.strip() for s in segments).strip()


async def play_audio(
    runtime: Runtime,
    brain: Brain,
    config: Mapping[str, Any],
    commit_id: str,
    test: Mapping[str, Any],
    caller_model: str | None,
) -> Played:
    """One repetition of ``test`` in audio mode; ``Played.heard`` holds the agent's replies as
    the recogniser heard them (the opening first)."""
    settings = runtime.settings
    transcriber = await asyncio.to_thread(shared_transcriber, settings, "live")
    voices = shared_synthesizers(settings)
    synthesizer: Synthesizer = voices.get(None)
    sources = VariableSources(
        params=dict(test.get("params", {})), contact={}, defaults=config.get("variables", {})
    )
    spec = resolve_agent_spec(
        settings,
        _NoCallFields(),
        config,
        commit_id=commit_id,
        render=lambda template: render(template, sources),
    )
    entries: list[dict[str, Any]] = []
    scripted = [t["user"] for t in test.get("turns") or []]
    persona = test.get("caller")
    most = len(scripted) if persona is None else int(persona.get("max_turns", 10))
    said = 0

    async def next_line() -> bytes | None:
        nonlocal said
        if said >= most:
            return None
        if persona is None:
            line: str | None = scripted[said]
        else:
            line = await caller_line(brain, caller_model, persona, entries)
        if line is None:
            return None
        said += 1
        pcm = await asyncio.to_thread(synthesizer.synthesize, line, SAMPLE_RATE)
        return _trim(pcm)

    opening = bool(spec.disclosure or (spec.agent_speaks_first and spec.first_message))
    caller = ScriptedCaller(next_line, opening=opening)
    began = time.monotonic()
    toolbox = MockedToolbox(Toolbox.from_configs(spec.tools), test.get("mocks", {}))

    async def report(_type: str, _data: dict[str, Any]) -> None:
        return None

    loop = TurnLoop(
        connection=caller,
        listener=Listener(
            caller,
            transcriber=transcriber,
            hints=spec.keyterms,
            endpointing=Endpointing.from_settings(settings),
        ),
        speaker=Speaker(caller, synthesizer),
        transcript=TranscriptLog(
            entries,
            lambda: time.monotonic() - began,
            redactor=Redactor.from_config(spec.redaction),
        ),
        spec=spec,
        brain=brain,
        report=report,
        toolbox=toolbox,
    )
    reason = await loop.run()
    heard = [await asyncio.to_thread(_heard, transcriber, bytes(pcm)) for pcm in caller.replies]
    reply_ms = [
        round((began_at - spoke) * 1000)
        for spoke, began_at in zip(caller.spoke_until, caller.reply_began[1:], strict=False)
        if began_at is not None
    ]
    played = Played(ended=reason == AGENT_HANGUP, reply_ms=reply_ms)
    played.history.transcript[:] = entries
    played.heard = [line for line in heard if line]
    return played
