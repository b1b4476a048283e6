"""What happens on an answered call: the seam between the engine and the agent's turn loop.

The engine (``engine.calls``) answers or places the call, then calls, in order:

    services = build_services(runtime)                    # once per worker process
    context  = CallContext.from_call(call)                # when the call is answered
    await hold_conversation(context, connection, services)  # until either side hangs up
    ... the engine hangs up, stores the recording and completes the call
        (transcript = context.transcript) ...
    await after_call(context, services)                   # after the call is completed
    await services.aclose()                               # when the worker stops

``hold_conversation`` is cut off at CALLPLANE_MAX_CALL_SECONDS (the task is cancelled) and the
engine hangs up whatever it returns; it never touches the call's status.

The conversation itself is the turn loop (``turn_loop.py``: listening, the brain, speaking,
barge-in); after the call, ``aftercall.py`` writes the summary and analysis results and sends
``call.analyzed``. Without a brain (CALLPLANE_LLM_BASE_URL unset) the agent speaks
``first_message`` and listens, as DESIGN §10 says.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from callplane.brain import Brain
from callplane.engine.aftercall import analyze_call, record_agent_event
from callplane.engine.endpointing import Endpointing
from callplane.engine.listening import Listener
from callplane.engine.speaking import Speaker
from callplane.engine.turn_loop import Agent, TranscriptLog, TurnLoop
from callplane.models.base import utcnow
from callplane.models.calls import Call
from callplane.runtime import Runtime
from callplane.settings import Settings
from callplane.speech.base import Synthesizer, Transcriber
from callplane.speech.engines import Synthesizers, build_voices
from callplane.telephony.base import Connection
from callplane.voices.service import call_voice_engine

if TYPE_CHECKING:
    from callplane.engine.batching import GroupCommit

log = logging.getLogger("callplane.engine.conversation")


@dataclass
class ConversationServices:
    """What a conversation may use, built once per worker process."""

    runtime: Runtime
    synthesizer: Synthesizer | None = None
    #: Every voice engine, by name; a call speaks with its voice's (DESIGN §16).
    voices: Synthesizers | None = None
    transcriber: Transcriber | None = None
    brain: Brain | None = None
    #: The worker's group commit, for the after-call write (set by the engine).
    moves: GroupCommit | None = None

    async def aclose(self) -> None:
        if self.brain is not None:
            await self.brain.aclose()


def build_services(runtime: Runtime) -> ConversationServices:
    settings = runtime.settings
    # Whisper takes a second or two and memory to load: only a network with audio needs it.
    audio = settings.telephony == "sip"
    services = ConversationServices(
        runtime=runtime,
        synthesizer=_local_synthesizer(),
        voices=build_voices(settings.voice_engine, settings.piper_voices_dir),
        transcriber=_local_transcriber(settings) if audio else None,
        brain=Brain.from_settings(settings),
    )
    # Everything loaded so far (the app, SQLAlchemy, the models) lives as long as the process:
    # out of the collector's sight, a full collection stops being a ~200 ms pause of every call
    # on the worker (measured here with the app loaded: 195 ms before, well under 1 ms after).
    # Once per process: a later freeze would also pin whatever cyclic garbage exists then.
    global _frozen
    if not _frozen:
        gc.freeze()
        _frozen = True
    return services


_frozen = False


def _local_synthesizer() -> Synthesizer | None:
    """The local text-to-speech engine (espeak-ng); without it the agent cannot be heard."""
    try:
        from callplane.speech.synthesis import build_synthesizer

        return build_synthesizer()
    except Exception:
        log.warning(
            "local speech synthesis unavailable: the agent will not be heard", exc_info=True
        )
        return None


def _local_transcriber(settings: Settings) -> Transcriber | None:
    """Whisper, loaded now so the first call does not wait for it; without the speech extra
    the agent cannot hear the caller (it still speaks and records)."""
    key = (settings.whisper_model_dir, settings.transcriber_threads)
    with _transcribers_lock:
        if key not in _transcribers:
            try:
                from callplane.speech.transcriber import WhisperTranscriber

                # Word times are for recordings' transcripts; a turn needs only its text (a
                # fifth less CPU, straight off the response latency).
                _transcribers[key] = WhisperTranscriber(
                    settings.whisper_model_dir,
                    cpu_threads=settings.transcriber_threads,
                    word_timestamps=False,
                )
            except Exception:
                log.warning(
                    "speech recognition unavailable: the agent will not hear", exc_info=True
                )
                return None
        return _transcribers[key]


#: One model per process, whatever the number of engines (loading takes a second or two).
_transcribers: dict[tuple[str | None, int], Transcriber] = {}
_transcribers_lock = threading.Lock()


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
    #: Seconds from the end of each caller turn to the first media of the agent's reply.
    latencies: list[float] = field(default_factory=list)
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


async def hold_conversation(
    context: CallContext, connection: Connection, services: ConversationServices
) -> None:
    """The turn loop, until either side hangs up."""

    async def report(type_: str, data: dict[str, Any]) -> None:
        await record_agent_event(
            services.runtime, context.organization_id, context.call_id, type_, data
        )

    synthesizer = services.synthesizer
    if services.voices is not None:
        engine = await call_voice_engine(
            services.runtime, context.organization_id, context.voice_uuid
        )
        synthesizer = services.voices.get(engine)
        connection.speak_as(synthesizer)
    loop = TurnLoop(
        connection=connection,
        listener=Listener(
            connection,
            transcriber=services.transcriber,
            hints=context.keyterms,
            endpointing=Endpointing.from_settings(services.runtime.settings),
        ),
        speaker=Speaker(connection, synthesizer),
        transcript=TranscriptLog(context.transcript, context.elapsed),
        agent=Agent(context.call_prompt, context.first_message, context.agent_speaks_first),
        brain=services.brain,
        report=report,
        latencies=context.latencies,
    )
    await loop.run()


async def after_call(context: CallContext, services: ConversationServices) -> None:
    """After the call completed: summary, analyzers, ``call.analyzed``."""
    await analyze_call(
        services.runtime,
        services.brain,
        context.organization_id,
        context.call_id,
        context.transcript,
        context.analyzers,
        context.latencies,
        moves=services.moves,
    )
