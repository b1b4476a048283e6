"""What happens on an answered call: the seam between the engine and the agent's turn loop.

The engine (``engine.calls``) answers or places the call, then calls, in order:

    services = build_services(runtime)                    # once per worker process
    context  = CallContext.from_call(call)                # when the call is answered
    await hold_conversation(context, connection, services)  # until either side hangs up
    ... the engine hangs up, stores the recording and completes the call
        (transcript = context.transcript) ...
    await after_call(context, services)                   # after the call is completed

``hold_conversation`` is cut off at CALLPLANE_MAX_CALL_SECONDS (the task is cancelled) and the
engine hangs up whatever it returns; it never touches the call's status.

This version is the minimal agent DESIGN §10 describes for a deployment without a brain: it
speaks ``first_message`` (when ``agent_speaks_first`` is not false) and listens, recording
each line as a transcript entry. The full turn loop (speech recognition, the LLM, synthesis)
replaces the bodies of these functions and nothing else.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from callplane.models.base import utcnow
from callplane.models.calls import Call
from callplane.runtime import Runtime
from callplane.speech.base import Synthesizer, Transcriber
from callplane.telephony.base import (
    FRAME_BYTES,
    SAMPLE_RATE,
    AudioFrame,
    Connection,
    TextFrame,
)

log = logging.getLogger("callplane.engine.conversation")


@dataclass
class ConversationServices:
    """What a conversation may use, built once per worker process."""

    runtime: Runtime
    synthesizer: Synthesizer | None = None
    transcriber: Transcriber | None = None


def build_services(runtime: Runtime) -> ConversationServices:
    return ConversationServices(runtime=runtime, synthesizer=_local_synthesizer())


def _local_synthesizer() -> Synthesizer | None:
    """The local text-to-speech engine when it is installed (``callplane.speech.synthesis``)."""
    try:
        from callplane.speech import synthesis  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return None
    build = getattr(synthesis, "build_synthesizer", None)
    if build is None:
        return None
    try:
        synthesizer: Synthesizer | None = build()
    except Exception:
        log.warning("local speech synthesis unavailable", exc_info=True)
        return None
    return synthesizer


@dataclass
class CallContext:
    """The answered call as the conversation sees it."""

    organization_id: int
    call_id: uuid.UUID
    direction: str | None
    to_number: str | None
    from_number: str | None
    agent_uuid: uuid.UUID | None
    voice_uuid: uuid.UUID | None
    call_prompt: str | None
    first_message: str | None
    agent_speaks_first: bool | None
    language: str | None
    keyterms: list[str]
    params: dict[str, Any]
    analyzers: list[Any]
    started_at: datetime
    #: Transcript entries (SPEC's Transcript entry), stored on the call when it completes.
    transcript: list[dict[str, Any]] = field(default_factory=list)
    _started_monotonic: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        # Timestamps count from started_at, which may be a moment ago (answered-by detection).
        behind = (utcnow() - self.started_at).total_seconds()
        self._started_monotonic = time.monotonic() - max(0.0, behind)

    @classmethod
    def from_call(cls, call: Call) -> CallContext:
        assert call.started_at is not None
        return cls(
            organization_id=call.organization_id,
            call_id=call.id,
            direction=call.direction,
            to_number=call.to_number,
            from_number=call.from_number,
            agent_uuid=call.agent_uuid,
            voice_uuid=call.voice_uuid,
            call_prompt=call.call_prompt,
            first_message=call.first_message,
            agent_speaks_first=call.agent_speaks_first,
            language=call.language,
            keyterms=list(call.keyterms or []),
            params=dict(call.params or {}),
            analyzers=list(call.analyzers or []),
            started_at=call.started_at,
        )

    def elapsed(self) -> float:
        """Seconds since the call was answered."""
        return time.monotonic() - self._started_monotonic

    def add_line(self, role: str, text: str) -> dict[str, Any]:
        entry = {"role": role, "text": text, "timestamp": round(self.elapsed(), 3)}
        self.transcript.append(entry)
        return entry


async def say(
    context: CallContext, connection: Connection, services: ConversationServices, text: str
) -> None:
    """Speak one line: a text frame on text media, synthesised speech on audio media."""
    context.add_line("assistant", text)
    if connection.media == "text":
        await connection.play(TextFrame(text))
        return
    if services.synthesizer is None:
        log.info(
            "no speech synthesis configured: line not spoken",
            extra={"call_id": str(context.call_id)},
        )
        return
    pcm = await asyncio.to_thread(services.synthesizer.synthesize, text, SAMPLE_RATE)
    for start in range(0, len(pcm), FRAME_BYTES):
        await connection.play(AudioFrame(pcm[start : start + FRAME_BYTES]))


async def hold_conversation(
    context: CallContext, connection: Connection, services: ConversationServices
) -> None:
    """Speak first if asked to, then listen until the far end hangs up."""
    if context.agent_speaks_first is not False and context.first_message:
        await say(context, connection, services, context.first_message)
    async for frame in connection.frames():
        if isinstance(frame, TextFrame) and frame.text:
            context.add_line("user", frame.text)
        # Audio is only heard by a transcriber; the turn loop that has one replaces this body.


async def after_call(context: CallContext, services: ConversationServices) -> None:
    """After the call completed: summary and analyzers (the brain's work; none here)."""
