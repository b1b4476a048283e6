"""The agent config of docs/agents.md: every key optional, unknown keys refused, each error naming
its JSON path (``tools/2/url``).

A config is stored as the client wrote it (unset keys stay absent, so a diff shows what people
changed), except that each tool's ``name`` is filled in from its ``type``: tools are compared and
merged by name.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from callplane.errors import InvalidInput
from callplane.kit.schemas import LANGUAGE_TAG, UUID_TEXT, Analyzer, SafeStr
from callplane.privacy.redaction import ENTITIES
from callplane.speech.models import known_language
from callplane.tools.config import Strict as _Strict
from callplane.tools.config import ToolConfig
from callplane.tools.registry import TOOL_TYPES as REGISTRY
from callplane.tools.registry import config_union

VARIABLE_NAME = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"

#: A tool: one of the registry's kinds, by ``type`` (each declares its model in its module).
log = logging.getLogger("callplane.agents")

if TYPE_CHECKING:
    Tool = ToolConfig
else:
    Tool = config_union()
#: The ``type`` values the API accepts.
TOOL_TYPES = tuple(REGISTRY)


class Voicemail(_Strict):
    action: Literal["hang_up", "leave_message"] = "hang_up"
    message: Annotated[SafeStr, StringConstraints(max_length=2_000)] | None = None

    @model_validator(mode="after")
    def _message_to_leave(self) -> Voicemail:
        if self.action == "leave_message" and not self.message:
            raise ValueError("leave_message needs a message")
        return self


class Knowledge(_Strict):
    """``knowledge``: the knowledge base ``auto`` looks each caller turn up in."""

    knowledge_base_id: Annotated[str, StringConstraints(pattern=UUID_TEXT)]
    auto: bool = False


def _known_entity(entity: str) -> str:
    if entity not in ENTITIES:
        raise ValueError(f"unknown entity: {entity} (one of {', '.join(ENTITIES)})")
    return entity


class Redaction(_Strict):
    """``redaction`` (docs/privacy.md#redaction): what is replaced by ``[entity]`` tokens in
    everything the call stores or sends."""

    entities: Annotated[
        list[Annotated[str, AfterValidator(_known_entity)]], Field(max_length=len(ENTITIES))
    ] = []
    #: Each redacted stretch of the recording is covered with a tone.
    recordings: bool = False
    #: The brain is sent the redacted text as well.
    llm: bool = False


def _unique_tool_names(tools: list[Any]) -> list[Any]:
    seen: set[str] = set()
    for tool in tools:
        name = tool.name or tool.type
        if name in seen:
            raise ValueError(f"tool names must be unique: {name} appears twice")
        seen.add(name)
    return tools


def _known_language(tag: str) -> str:
    if not known_language(tag):
        raise ValueError(f"unknown language: {tag} (a tag Whisper recognises, such as es or es-MX)")
    return tag


KnownLanguage = Annotated[
    str, StringConstraints(pattern=LANGUAGE_TAG), AfterValidator(_known_language)
]
_Phrases = Annotated[
    list[Annotated[SafeStr, StringConstraints(min_length=1, max_length=255)]],
    Field(max_length=20),
]


class LanguagePreset(_Strict):
    """What changes when the call is, or becomes, in one language (docs/languages.md)."""

    voice_id: Annotated[str, StringConstraints(pattern=r"^[0-9a-fA-F-]{32,36}$")] | None = None
    first_message: Annotated[SafeStr, StringConstraints(max_length=2_000)] | None = None
    #: Added to the agent's prompt.
    prompt: Annotated[SafeStr, StringConstraints(max_length=20_000)] | None = None
    end_call_phrases: _Phrases = []
    opt_out_phrases: _Phrases = []


#: What people say when they do not want to be called again (``opt_out_phrases``' default).
OPT_OUT_PHRASES = (
    "stop calling",
    "do not call",
    "don't call me",
    "remove me from your list",
    "take me off your list",
)


class AgentConfig(_Strict):
    """Every key of the agent config (docs/agents.md)."""

    prompt: Annotated[SafeStr, StringConstraints(max_length=100_000)] | None = None
    first_message: Annotated[SafeStr, StringConstraints(max_length=2_000)] | None = None
    #: Said before anything else on every call (a recording or automated-call notice).
    disclosure: Annotated[SafeStr, StringConstraints(max_length=500)] | None = None
    agent_speaks_first: bool | None = None
    voice_id: Annotated[str, StringConstraints(pattern=r"^[0-9a-fA-F-]{32,36}$")] | None = None
    language: Annotated[str, StringConstraints(pattern=LANGUAGE_TAG)] | None = None
    keyterms: Annotated[
        list[Annotated[SafeStr, StringConstraints(min_length=1, max_length=255)]],
        Field(max_length=100),
    ] = []
    model: Annotated[SafeStr, StringConstraints(min_length=1, max_length=200)] | None = None
    temperature: Annotated[float, Field(ge=0, le=2, allow_inf_nan=False)] | None = None
    variables: Annotated[
        dict[
            Annotated[str, StringConstraints(pattern=VARIABLE_NAME)],
            Annotated[SafeStr, StringConstraints(max_length=10_000)],
        ],
        Field(max_length=200),
    ] = {}
    required_variables: Annotated[
        list[Annotated[str, StringConstraints(pattern=VARIABLE_NAME)]], Field(max_length=50)
    ] = []
    tools: Annotated[list[Tool], Field(max_length=32), AfterValidator(_unique_tool_names)] = []
    voicemail: Voicemail | None = None
    max_duration_seconds: Annotated[int, Field(ge=10, le=14_400)] | None = None
    silence_timeout_seconds: Annotated[int, Field(ge=5, le=600)] | None = None
    end_call_phrases: Annotated[
        list[Annotated[SafeStr, StringConstraints(min_length=1, max_length=255)]],
        Field(max_length=20),
    ] = []
    #: A caller line holding one puts the number on the do-not-call list and ends the call.
    opt_out_phrases: Annotated[
        list[Annotated[SafeStr, StringConstraints(min_length=1, max_length=255)]],
        Field(max_length=20),
    ] = Field(default_factory=lambda: list(OPT_OUT_PHRASES))
    summary_prompt: Annotated[SafeStr, StringConstraints(max_length=10_000)] | None = None
    analyzers: Annotated[list[Analyzer], Field(max_length=50)] = []
    knowledge: Knowledge | None = None
    #: Per-language presets, by language tag (``es``, ``es-MX``).
    languages: Annotated[dict[KnownLanguage, LanguagePreset], Field(max_length=50)] = {}
    #: The summary's language; unset: the call's.
    summary_language: KnownLanguage | None = None
    #: Days after a call ends that its recording and transcript text are deleted
    #: (``engine/call_retention.py``); None keeps them.
    retention_days: Annotated[int, Field(ge=1, le=3_650)] | None = None
    #: False: the call's audio is never stored at all.
    store_recordings: bool | None = None
    redaction: Redaction | None = None


def _path(loc: tuple[str | int, ...]) -> str:
    parts: list[str] = []
    for index, part in enumerate(loc):
        # a discriminated union adds the tag to the location (tools/2/function/url)
        under_tool = index >= 2 and loc[index - 2] == "tools" and isinstance(loc[index - 1], int)
        if under_tool and part in TOOL_TYPES:
            continue
        if isinstance(part, str) and part.startswith("function-after["):
            continue
        parts.append(str(part).replace("~", "~0").replace("/", "~1"))
    return "/".join(parts)


_MESSAGES = {
    "extra_forbidden": "unknown key",
    "missing": "is required",
    "union_tag_invalid": f"type must be one of {', '.join(TOOL_TYPES)}",
    "union_tag_not_found": "type is required",
}


def validate_config(document: object, *, field: str = "config") -> dict[str, Any]:
    """The config as stored, or InvalidInput whose messages name each bad path."""
    if not isinstance(document, dict):
        raise InvalidInput(f"{field}: must be a JSON object", loc=("body", field))
    try:
        parsed = AgentConfig.model_validate(document)
    except ValidationError as exc:
        messages = []
        for error in exc.errors(include_input=False, include_url=False):
            path = _path(tuple(error["loc"]))
            message = _MESSAGES.get(error["type"]) or str(error["msg"]).removeprefix(
                "Value error, "
            )
            messages.append(f"{field}/{path}: {message}" if path else f"{field}: {message}")
        failure = InvalidInput(messages[0], loc=("body",))
        failure.errors = messages[:20]
        raise failure from None
    stored = parsed.model_dump(mode="json", exclude_unset=True)
    for tool, given in zip(stored.get("tools", []), parsed.tools, strict=True):
        tool["name"] = given.name or given.type
    return stored


def read_config(stored: Mapping[str, Any]) -> AgentConfig:
    """A stored config, typed, for a conversation about to start. The API checked it when it
    was committed; a key or a tool that a rule added since refuses is left out, with a warning,
    rather than failing the call."""
    document: dict[str, Any] = dict(stored)
    while True:
        try:
            return AgentConfig.model_validate(document)
        except ValidationError as exc:
            errors = exc.errors(include_input=False, include_url=False)
        bad_tools, bad_keys = set(), set()
        for error in errors:
            loc = error["loc"]
            if len(loc) > 1 and loc[0] == "tools" and isinstance(loc[1], int):
                bad_tools.add(loc[1])
            elif loc:
                bad_keys.add(str(loc[0]))
        log.warning(
            "a stored agent config breaks today's rules; left out: %s",
            ", ".join([*sorted(bad_keys), *(f"tools/{n}" for n in sorted(bad_tools))]),
        )
        left_out = False
        tools = document.get("tools")
        if bad_tools and isinstance(tools, list):
            document["tools"] = [t for n, t in enumerate(tools) if n not in bad_tools]
            left_out = True
        for key in bad_keys & document.keys():
            del document[key]
            left_out = True
        if not left_out:
            return AgentConfig()  # nothing left to leave out: the defaults


def tool_names(config: dict[str, Any]) -> list[str]:
    return [t["name"] for t in config.get("tools", [])]
