"""What happens on an answered call: the seam between the engine and the agent's turn loop.

The engine (``engine.calls``) answers or places the call, then calls, in order:

    services = ConversationServices(runtime, build_providers(settings))  # once per worker
    context  = CallContext.from_call(call)                 # when the call is answered
    reason   = await hold_conversation(context, connection, services)  # until it ends
    ... the engine hangs up, stores the recording and completes the call
        (transcript = context.transcript, ``reason`` in ``call.ended``) ...
    await after_call(context, services)                    # after the call is completed

``hold_conversation`` resolves the call's ``AgentSpec`` (agent.py: settings < the agent's commit
< the call's own fields), then runs the turn loop (``turn_loop.py``: listening, the brain,
speaking, barge-in, the ways a call ends); it never touches the call's status. After the call,
``aftercall.py`` writes the summary and analysis results and sends ``call.analyzed``. Without
a brain (CALLPLANE_LLM_BASE_URL unset) the agent speaks ``first_message`` and listens, as
docs/engine-core.md says.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

from callplane.engine.aftercall import ApplyMove, analyze_call, record_agent_event
from callplane.engine.agent import (
    AgentSource,
    AgentSpec,
    no_agent_commit,
    resolve_agent_spec,
)
from callplane.engine.conversation.endpointing import Endpointing
from callplane.engine.conversation.language import CallLanguage
from callplane.engine.conversation.listening import Listener
from callplane.engine.conversation.reply import Reply
from callplane.engine.conversation.speaking import Speaker
from callplane.engine.conversation.turn_loop import TranscriptLog, TurnLoop
from callplane.engine.providers import Providers
from callplane.engine.toolwrites import record_transfer, set_cart
from callplane.models.base import utcnow
from callplane.models.calls import Call
from callplane.privacy.redaction import Redactor
from callplane.runtime import Runtime
from callplane.settings import Settings
from callplane.speech.engines import voice_for_language
from callplane.speech.models import language_name, primary
from callplane.telephony.base import Connection
from callplane.tools import CallHooks, Transfer, tool_context
from callplane.tools.function import function_tool_client
from callplane.voices.service import call_voice_engine

log = logging.getLogger("callplane.engine.conversation.session")

#: The longest a function tool may take (docs/tools.md: ``timeout_seconds`` 1-30).


@dataclass
class ConversationServices:
    """What every conversation of a worker shares."""

    runtime: Runtime
    providers: Providers
    #: Where a call's agent commit comes from (the agents domain, plugged in by whoever
    #: assembles the engine); by default no call has one.
    agents: AgentSource = no_agent_commit
    #: The worker's group commit, for the after-call write (None: a transaction of its own).
    apply_move: ApplyMove | None = None
    #: Function tools' client: webhooks' network rule at connect time, no redirects.
    tools_http: httpx.AsyncClient = field(init=False)

    def __post_init__(self) -> None:
        self.tools_http = function_tool_client(self.runtime.settings)

    async def aclose(self) -> None:
        await self.tools_http.aclose()
        await self.providers.aclose()


@dataclass
class CallContext:
    """The answered call as the conversation sees it."""

    organization_id: int
    call_id: uuid.UUID
    direction: str | None
    to_number: str | None
    from_number: str | None
    agent_uuid: uuid.UUID | None
    agent_commit_id: str | None
    answered_by: str | None
    voice_uuid: uuid.UUID | None
    call_prompt: str | None
    first_message: str | None
    agent_speaks_first: bool | None
    language: str | None
    keyterms: list[str]
    params: dict[str, Any]
    analyzers: list[Any]
    started_at: datetime
    external_identifiers: dict[str, Any] = field(default_factory=dict)
    #: The agent as resolved when the conversation started.
    spec: AgentSpec | None = None
    #: Transcript entries (SPEC's Transcript entry), stored on the call when it completes.
    transcript: list[dict[str, Any]] = field(default_factory=list)
    #: Seconds from the end of each caller turn to the first media of the agent's reply.
    latencies: list[float] = field(default_factory=list)
    #: The agent's redaction, once the conversation has started (None: nothing redacted).
    redactor: Redactor | None = None
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
            agent_commit_id=call.agent_commit_id,
            answered_by=call.answered_by,
            voice_uuid=call.voice_uuid,
            call_prompt=call.call_prompt,
            first_message=call.first_message,
            agent_speaks_first=call.agent_speaks_first,
            language=call.language,
            keyterms=list(call.keyterms or []),
            params=dict(call.params or {}),
            analyzers=list(call.analyzers or []),
            started_at=call.started_at,
            external_identifiers=dict(call.external_identifiers or {}),
        )

    def tool_payload(self) -> dict[str, Any]:
        """The call as a function tool's request names it (docs/tools.md)."""
        return {
            "id": str(self.call_id),
            "direction": self.direction,
            "from_number": self.from_number,
            "to_number": self.to_number,
            "params": self.params,
            "external_identifiers": self.external_identifiers,
            "agent_id": str(self.agent_uuid) if self.agent_uuid else None,
            "agent_commit_id": self.spec.commit_id if self.spec else self.agent_commit_id,
        }

    def elapsed(self) -> float:
        """Seconds since the call was answered."""
        return time.monotonic() - self._started_monotonic


def voice_of(spec: AgentSpec, settings: Settings) -> str | None:
    """The synthesizer voice for the agent's language when its Voice names no engine (None: the
    server's default voice, for English): an installed Piper voice of the language, else
    espeak-ng's (speech/engines.py)."""
    return voice_for_language(spec.language, settings)


async def hold_conversation(
    context: CallContext, connection: Connection, services: ConversationServices
) -> str:
    """The turn loop, until the call ends; why it ended."""
    runtime = services.runtime
    commit = await services.agents(runtime, context)
    resolved = resolve_agent_spec(
        runtime.settings,
        context,
        commit.config,
        commit_id=commit.commit_id or context.agent_commit_id,
        render=commit.render,
    )
    overrides = {"first_message"} if context.first_message is not None else set()
    if context.voice_uuid is not None:
        overrides.add("voice_id")
    language = CallLanguage(runtime.settings, resolved, call_overrides=overrides)
    spec = context.spec = language.spec()
    context.redactor = Redactor.from_config(spec.redaction)

    async def report(type_: str, data: dict[str, Any]) -> None:
        # The agent's own events (a tool's error text may quote what the caller said).
        if context.redactor is not None:
            data = context.redactor.value(data, count=False)
        await record_agent_event(runtime, context.organization_id, context.call_id, type_, data)

    started = None
    if spec.commit_id is not None or spec.missing_variables:
        # Beside the opening line, not before it: the caller should not wait on a write.
        data = {"commit_id": spec.commit_id, "missing_variables": list(spec.missing_variables)}
        started = asyncio.create_task(report("agent.started", data))
    providers = services.providers
    organization_id, call_id = context.organization_id, context.call_id

    async def cart(value: dict[str, Any]) -> None:
        # The cart goes out with the call in every webhook: redacted as the transcript is.
        if context.redactor is not None:
            value = context.redactor.value(value, count=False)
        await set_cart(runtime, organization_id, call_id, value)

    async def transferred(transfer: Transfer) -> None:
        await record_transfer(runtime, organization_id, call_id, transfer, commit.agent_name)

    # The call's voice speaks every agent line (docs/voices.md): its Voice's engine, else an
    # espeak-ng voice for the agent's language, else the server's default.
    engine = await call_voice_engine(runtime, organization_id, spec.voice_id)
    synthesizer = providers.synthesizer(engine or voice_of(spec, runtime.settings))
    connection.speak_as(synthesizer)

    async def language_changed(changed: AgentSpec) -> None:
        # The language's preset voice, else its own: the call's voice speaks the old language.
        chosen = None
        if changed.voice_id != resolved.voice_id:
            chosen = await call_voice_engine(runtime, organization_id, changed.voice_id)
        voice = providers.synthesizer(chosen or voice_of(changed, runtime.settings))
        connection.speak_as(voice)
        loop.speaker.use(voice)
        context.spec = changed

    async def switch_language(tag: str) -> bool:
        return await loop.use_language(tag)

    async def speak_to(other: Connection, line: str) -> None:
        said = Reply()
        speaker = Speaker(other, synthesizer)
        await speaker.say(said, line)
        await speaker.end_line(said)
        said.generated()
        await said.wait_for_playout()

    reach = tool_context(
        connection=connection,
        call=context.tool_payload(),
        organization_id=organization_id,
        runtime=runtime,
        http=services.tools_http,
        tools_secret=commit.tools_secret,
        on_call=CallHooks(
            set_cart=cart,
            record_transfer=transferred,
            speak_to=speak_to,
            transcript=context.transcript,
            brain=providers.brain,
            switch_language=switch_language,
        ),
    )
    loop = TurnLoop(
        connection=connection,
        listener=Listener(
            connection,
            transcriber=language.transcriber() if providers.transcriber is not None else None,
            hints=spec.keyterms,
            endpointing=Endpointing.from_settings(runtime.settings),
            tell_guesses=runtime.settings.speculative_reply,
        ),
        speaker=Speaker(connection, synthesizer),
        transcript=TranscriptLog(
            context.transcript,
            context.elapsed,
            language.entry_language,
            redactor=context.redactor,
        ),
        spec=spec,
        brain=providers.brain,
        report=report,
        answered_by=context.answered_by,
        latencies=context.latencies,
        tool_context=reach,
        language=language,
        on_language=language_changed,
    )
    try:
        return await loop.run()
    finally:
        if started is not None:
            with contextlib.suppress(Exception):
                await started


async def after_call(context: CallContext, services: ConversationServices) -> None:
    """After the call completed: summary, analyzers, ``call.analyzed``."""
    spec = context.spec
    await analyze_call(
        services.runtime,
        services.providers.brain,
        context.organization_id,
        context.call_id,
        context.transcript,
        spec.analyzers if spec is not None else context.analyzers,
        context.latencies,
        apply_move=services.apply_move,
        summary_prompt=summary_instructions(spec) if spec is not None else None,
        redactor=context.redactor,
    )


def summary_instructions(spec: AgentSpec) -> str | None:
    """The agent's ``summary_prompt``, and the summary's language: ``summary_language``, else
    the language the call ended in (English needs no saying)."""
    language = spec.summary_language or spec.language
    if spec.summary_language is None and primary(language) in (None, "en"):
        return spec.summary_prompt
    name = language_name(language)
    return "\n\n".join(p for p in (spec.summary_prompt, f"Write the summary in {name}.") if p)
