"""``POST /agents/{uuid}/conversations``: one text-only turn of a commit (docs/agents.md), so a team
can test a branch in CI before merging it. The same prompt, variables and tools a call would
get; tools are mocked (each result ``{"mocked": true}``) unless ``tools`` is ``run``
(``text_tools``).
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.agents import service
from callplane.agents.config import AgentConfig, read_config
from callplane.agents.contacts import contact_data
from callplane.agents.schemas import ConversationRequest
from callplane.agents.text_tools import ToolRunner, tool_runner
from callplane.agents.variables import VariableSources, render
from callplane.brain.base import RETRY_AFTER_SECONDS, Brain, BrainError, TextDelta, ToolCall
from callplane.brain.build import build_brain
from callplane.brain.history import ChatHistory, Said, ToolAnswered, ToolCalled
from callplane.contacts.identifiers import normalize_identifier
from callplane.errors import InvalidInput, Unavailable
from callplane.privacy.redaction import Redactor
from callplane.runtime import Runtime
from callplane.tools import knowledge
from callplane.tools.toolbox import Toolbox

#: Brain rounds in one turn: a tool result may lead to one more line, not to a loop.
MAX_ROUNDS = 2


def stored(part: Any) -> dict[str, Any]:
    """A part of the typed config as the commit stores it (what a tool reads its settings from,
    as on a call)."""
    return dict(part.model_dump(mode="json", exclude_unset=True))


def redactor(config: AgentConfig) -> Redactor | None:
    """The config's ``redaction`` as a call applies it (None: nothing redacted)."""
    return Redactor.from_config(stored(config.redaction) if config.redaction is not None else None)


def brain_tools(config: AgentConfig) -> list[dict[str, Any]]:
    """The commit's tools as the brain sees them on a call (one registry: ``callplane.tools``);
    ``end_call`` is always among them."""
    return Toolbox.from_configs([stored(tool) for tool in config.tools]).definitions()


@dataclass(frozen=True)
class Scene:
    """What a text conversation of a commit starts from: the rendered prompt, disclosure and
    opening line (None when the agent waits for the caller), and the contact standing as the
    other party."""

    prompt: str | None
    disclosure: str | None
    opening: str | None
    identifier: str | None


async def prepare(
    session: AsyncSession,
    organization_id: int,
    config: AgentConfig,
    params: dict[str, Any],
    contact: str | None,
) -> Scene:
    """InvalidInput naming ``contact`` when it is not an identifier."""
    identifier = None
    known: dict[str, Any] = {}
    if contact:
        try:
            identifier = normalize_identifier(contact)
        except InvalidInput:
            raise InvalidInput("contact: not a valid contact identifier", loc=("body",)) from None
        known = await contact_data(session, organization_id, identifier)
    sources = VariableSources(params=params, contact=known, defaults=config.variables)

    def rendered(template: str | None) -> str | None:
        return render(template, sources)[0] if template else None

    # Unset or null: the agent speaks first, as on a call.
    speaks_first = config.agent_speaks_first is not False
    opening = rendered(config.first_message) if speaks_first else None
    return Scene(rendered(config.prompt), rendered(config.disclosure), opening, identifier)


async def take_turn(
    session: AsyncSession,
    runtime: Runtime,
    organization_id: int,
    agent_uuid: uuid.UUID,
    body: ConversationRequest,
) -> dict[str, Any]:
    agent = await service.get_agent(session, organization_id, agent_uuid)
    commit = await service.resolve_ref(session, organization_id, agent.id, body.ref)
    if commit is None:
        raise InvalidInput("ref: no such branch or commit of this agent", loc=("body",))
    config, commit_id, secret = read_config(commit.config), str(commit.id), agent.tools_secret
    scene = await prepare(session, organization_id, config, body.params, body.contact)
    history = ChatHistory(redactor=redactor(config))
    for message in body.messages:
        history.add(Said(message.role, message.text))
    #: The request's own lines: what the agent says comes after them.
    before = len(history.items)
    if not before and scene.disclosure:
        # Said before anything else, as on every call.
        history.add(Said("assistant", scene.disclosure))
    if not before and scene.opening:
        history.add(Said("assistant", scene.opening))
        return {"commit_id": commit_id, "entries": history.transcript, "ended": False}
    prompt, identifier = scene.prompt, scene.identifier
    # The turn has read all it needs. A POST's session holds SQLite's write lock, which the
    # tools' own writes (a record, contact data) would wait on, and which no one should hold
    # while a language model thinks: let it go.
    await session.rollback()
    brain = build_brain(runtime.settings)
    if brain is None:
        raise Unavailable("No language model is configured (CALLPLANE_LLM_BASE_URL)")
    # What a function tool's receiver is told of "the call": no call, the agent's commit, and
    # the request's contact as the other party.
    call = {
        "id": None,
        "direction": None,
        "from_number": None,
        "to_number": identifier,
        "params": body.params,
        "external_identifiers": {},
        "agent_id": str(agent_uuid),
        "agent_commit_id": commit_id,
    }
    await _consult(runtime, organization_id, config, body, history)
    try:
        async with tool_runner(
            runtime,
            organization_id,
            [stored(tool) for tool in config.tools],
            run=body.tools == "run",
            tools_secret=secret,
            call=call,
        ) as tools:
            ended = await rounds(brain, tools, prompt, history, config)
    except BrainError as exc:
        raise Unavailable(f"The language model failed: {exc}") from None
    finally:
        await brain.aclose()
    return {"commit_id": commit_id, "entries": history.transcript[before:], "ended": ended}


async def _consult(
    runtime: Runtime,
    organization_id: int,
    config: AgentConfig,
    body: ConversationRequest,
    history: ChatHistory,
) -> None:
    """``knowledge.auto``, as on a call: the caller's last words looked up before the brain is
    asked, what was found added as a ``knowledge_search`` call and its answer."""
    settings = stored(config.knowledge) if config.knowledge is not None else None
    if not knowledge.auto_enabled(settings) or not body.messages:
        return
    if body.messages[-1].role != "user" or settings is None:
        return
    consulted = await knowledge.consult(runtime, organization_id, settings, body.messages[-1].text)
    if consulted is not None:
        call_id = history.call_id()
        history.add(ToolCalled(call_id, knowledge.TYPE, {"query": consulted.query}))
        history.add(ToolAnswered(call_id, knowledge.TYPE, consulted.text))


async def rounds(
    brain: Brain,
    tools: ToolRunner,
    prompt: str | None,
    history: ChatHistory,
    config: AgentConfig,
) -> bool:
    """The agent's next lines and tool uses, added to ``history``; whether the agent ended
    the conversation."""
    ended = False
    spoken: list[str] = []
    for _ in range(MAX_ROUNDS):
        text, calls = await _one_reply(brain, history.messages(prompt), config)
        if text:
            history.add(Said("assistant", text))
            spoken.append(text.lower())
        calls = [replace(call, call_id=history.call_id()) for call in calls]
        for call in calls:
            history.add(ToolCalled(call.call_id, call.name, call.arguments))
        # The tools of one reply run together, as on a call: the turn waits for the slowest
        # deadline, not for their sum.
        answers = await asyncio.gather(*(tools.answer(call) for call in calls))
        for call, answer in zip(calls, answers, strict=True):
            history.add(ToolAnswered(call.call_id, call.name, answer.text))
            ended = ended or answer.ended
        if not calls or ended:
            break
    if not ended:
        phrases = [p.lower() for p in config.end_call_phrases]
        ended = any(p in line for p in phrases for line in spoken)
    return ended


async def _one_reply(
    brain: Brain, messages: list[dict[str, Any]], config: AgentConfig
) -> tuple[str, list[ToolCall]]:
    """The brain's reply; one that failed busy or unreachable before its first token is asked
    once more, as on a call."""
    parts: list[str] = []
    calls: list[ToolCall] = []
    retried = False
    while True:
        try:
            async for event in brain.stream_reply(
                messages,
                tools=brain_tools(config),
                model=config.model,
                temperature=config.temperature,
            ):
                if isinstance(event, TextDelta):
                    parts.append(event.text)
                else:
                    calls.append(event)
        except BrainError as exc:
            if retried or parts or calls or not exc.retryable:
                raise
            retried = True
            await asyncio.sleep(RETRY_AFTER_SECONDS)
            continue
        return "".join(parts).strip(), calls
