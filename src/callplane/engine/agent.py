"""What the agent is on one call: ``AgentSpec``, frozen, resolved once when the conversation
starts (docs/agents.md).

Three layers, the later winning: the deployment's settings (``CALLPLANE_LLM_MODEL``,
``CALLPLANE_MAX_CALL_SECONDS``) < the config of the agent's commit the call runs < the call's
own fields (``call_prompt``, ``first_message``, ``voice_id``, ``language``,
``agent_speaks_first``, ``keyterms``; its ``analyzers`` come first and the commit's are added).
Templates (prompt, first message, disclosure, voicemail message) are rendered here, once, by the
renderer the caller gives (``{{variables}}``, the agents domain's); the names it could not find
are kept for the ``agent.started`` event.

A call with no agent commit behaves as before agents existed: no voicemail handling (the agent
talks to the machine as to a person) and no silence timeout; an agent's config turns both on,
with docs/agents.md's defaults.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from pydantic import BaseModel

from callplane.agents.config import OPT_OUT_PHRASES, AgentConfig, read_config

if TYPE_CHECKING:
    from callplane.runtime import Runtime
    from callplane.settings import Settings

#: ``render(template) -> (text, names not found)``: the call's ``{{variables}}`` filled in.
Renderer = Callable[[str], tuple[str, Sequence[str]]]

T = TypeVar("T")

DEFAULT_LANGUAGE = "en"
DEFAULT_SILENCE_TIMEOUT_SECONDS = 30.0


def keep_template(template: str) -> tuple[str, Sequence[str]]:
    """The renderer of a call without variables: the text as written."""
    return template, ()


@dataclass(frozen=True)
class Voicemail:
    action: Literal["hang_up", "leave_message"] = "hang_up"
    #: Rendered; said once the greeting ends (``leave_message``).
    message: str = ""


@dataclass(frozen=True)
class AgentSpec:
    prompt: str | None = None
    first_message: str | None = None
    #: Rendered; said before anything else on every call (the voicemail message included).
    disclosure: str | None = None
    agent_speaks_first: bool = True
    voice_id: uuid.UUID | None = None
    language: str = DEFAULT_LANGUAGE
    keyterms: tuple[str, ...] = ()
    model: str | None = None
    temperature: float | None = None
    max_duration_seconds: float = 1800.0
    #: None: the agent waits for ever (a call without an agent commit).
    silence_timeout_seconds: float | None = None
    end_call_phrases: tuple[str, ...] = ()
    #: A caller line holding one of these opts the person out (``tools/opt_out.py``).
    opt_out_phrases: tuple[str, ...] = OPT_OUT_PHRASES
    #: None: a voicemail is talked to like a person (a call without an agent commit).
    voicemail: Voicemail | None = None
    summary_prompt: str | None = None
    analyzers: tuple[Mapping[str, Any], ...] = ()
    commit_id: str | None = None
    #: The commit's tools (docs/tools.md Tool objects, by ``type``); ``end_call`` is always added.
    tools: tuple[Mapping[str, Any], ...] = ()
    #: ``knowledge`` (``{"knowledge_base_id", "auto"}``): with ``auto``, each caller turn is
    #: looked up there before the brain is asked.
    knowledge: Mapping[str, Any] | None = None
    #: Per-language presets by tag (``{"es": {"voice_id", "first_message", "prompt",
    #: "end_call_phrases", "opt_out_phrases"}}``), applied by ``conversation/language.py``.
    languages: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: The summary's language (None: the call's).
    summary_language: str | None = None
    #: False (the config's ``store_recordings``): the call's audio is not kept.
    store_recordings: bool = True
    #: The config's ``redaction`` (``{"entities", "recordings", "llm"}``; None: nothing redacted).
    redaction: Mapping[str, Any] | None = None
    #: ``{{names}}`` found nowhere, sorted (docs/agents.md: the ``agent.started`` event lists them).
    missing_variables: tuple[str, ...] = ()

    def opts_out(self, line: str) -> bool:
        """Whether a caller line holds one of the opt-out phrases (case-insensitive, any
        apostrophe)."""
        folded = _folded(line)
        return any(_folded(phrase) in folded for phrase in self.opt_out_phrases if phrase)

    def ends_the_call(self, line: str) -> bool:
        """Whether an agent line holds one of the end-call phrases (case-insensitive)."""
        folded = line.casefold()
        return any(phrase.casefold() in folded for phrase in self.end_call_phrases if phrase)


def _folded(text: str) -> str:
    return " ".join(text.replace("\u2019", "'").casefold().split())


class CallFields(Protocol):
    """The call's own fields that override its agent's commit (a ``Call`` row has them)."""

    @property
    def call_prompt(self) -> str | None: ...
    @property
    def first_message(self) -> str | None: ...
    @property
    def agent_speaks_first(self) -> bool | None: ...
    @property
    def voice_uuid(self) -> uuid.UUID | None: ...
    @property
    def language(self) -> str | None: ...
    @property
    def keyterms(self) -> Sequence[str]: ...
    @property
    def analyzers(self) -> Sequence[Any]: ...


def resolve_agent_spec(
    settings: Settings,
    call: CallFields,
    config: Mapping[str, Any] | None = None,
    *,
    commit_id: str | None = None,
    render: Renderer = keep_template,
) -> AgentSpec:
    """The call's agent: ``settings`` < ``config`` (the commit's, read through the API's
    ``AgentConfig``; None without an agent) < ``call``; templates rendered with ``render``."""
    commit = read_config(config) if config is not None else AgentConfig()
    missing: set[str] = set()

    def rendered(template: str | None) -> str | None:
        if template is None:
            return None
        text, names = render(template)
        missing.update(names)
        return text

    voice = call.voice_uuid if call.voice_uuid is not None else _uuid(commit.voice_id)
    speaks_first = _first(call.agent_speaks_first, commit.agent_speaks_first)
    voicemail = None
    if config is not None:
        raw = commit.voicemail
        voicemail = Voicemail(
            action=raw.action if raw is not None else "hang_up",
            message=rendered(raw.message if raw is not None else None) or "",
        )
    silence: float | None = commit.silence_timeout_seconds
    if silence is None and config is not None:
        silence = DEFAULT_SILENCE_TIMEOUT_SECONDS
    return AgentSpec(
        prompt=rendered(_first(call.call_prompt, commit.prompt)),
        first_message=rendered(_first(call.first_message, commit.first_message)),
        disclosure=rendered(commit.disclosure) or None,
        agent_speaks_first=speaks_first is not False,
        voice_id=voice,
        language=_first(call.language, commit.language) or DEFAULT_LANGUAGE,
        keyterms=tuple(call.keyterms or commit.keyterms),
        model=commit.model or settings.llm_model,
        temperature=commit.temperature,
        max_duration_seconds=float(commit.max_duration_seconds or settings.max_call_seconds),
        silence_timeout_seconds=float(silence) if silence is not None else None,
        end_call_phrases=tuple(commit.end_call_phrases),
        opt_out_phrases=tuple(commit.opt_out_phrases),
        voicemail=voicemail,
        summary_prompt=commit.summary_prompt,
        analyzers=(*call.analyzers, *(_stored(a) for a in commit.analyzers)),
        commit_id=commit_id,
        tools=tuple(_stored(tool) for tool in commit.tools),
        missing_variables=tuple(sorted(missing)),
        knowledge=_stored(commit.knowledge) if commit.knowledge is not None else None,
        languages={
            tag: {
                **_stored(preset),
                **{
                    key: rendered(getattr(preset, key))
                    for key in ("first_message", "prompt")
                    if getattr(preset, key) is not None
                },
            }
            for tag, preset in commit.languages.items()
        },
        summary_language=commit.summary_language,
        store_recordings=commit.store_recordings is not False,
        redaction=_stored(commit.redaction) if commit.redaction is not None else None,
    )


def _first(call_value: T | None, commit_value: T | None) -> T | None:
    """The call's own field wins over its commit's."""
    return call_value if call_value is not None else commit_value


def _stored(model: BaseModel) -> dict[str, Any]:
    """A part of the config as the commit stores it (a tool reads its settings from this)."""
    return model.model_dump(mode="json", exclude_unset=True)


def _uuid(value: Any) -> uuid.UUID | None:
    if value is None:
        return None
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        return None


@dataclass(frozen=True)
class AgentCommit:
    """What a call's agent commit gives its conversation: where the integrator plugs in the
    agents domain (``AgentSource``)."""

    commit_id: str | None = None
    config: Mapping[str, Any] | None = None
    render: Renderer = field(default=keep_template)
    #: The agent's ``tools_secret`` (signs its function tools' requests; docs/tools.md). The
    #: agents domain fills it from the agent's row; None: function tools fail, and say so.
    tools_secret: str | None = None
    #: The agent's name (``handoff_metadata[provider].campaign_name``).
    agent_name: str | None = None


#: Loads a call's agent commit when its conversation starts. The default finds none.
AgentSource = Callable[["Runtime", Any], Awaitable[AgentCommit]]


async def no_agent_commit(_runtime: Runtime, _call: Any) -> AgentCommit:
    return AgentCommit()
