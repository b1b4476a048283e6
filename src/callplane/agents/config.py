"""The agent config of DESIGN §15: every key optional, unknown keys refused, each error naming
its JSON path (``tools/2/url``).

A config is stored as the client wrote it (unset keys stay absent, so a diff shows what people
changed), except that each tool's ``name`` is filled in from its ``type``: tools are compared and
merged by name.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import jsonschema
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from callplane.errors import InvalidInput
from callplane.kit.schemas import LANGUAGE_TAG, Analyzer, SafeStr, normalize_number

TOOL_NAME = r"^[a-zA-Z0-9_-]{1,64}$"
VARIABLE_NAME = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"
MAX_PARAMETERS_BYTES = 16 * 1024
UUID_TEXT = r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"

Text = Annotated[SafeStr, StringConstraints(max_length=2_000)]
Name = Annotated[SafeStr, StringConstraints(min_length=1, max_length=255)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Destination(_Strict):
    name: Name
    number: Annotated[SafeStr, StringConstraints(max_length=64)] | None = None
    sip: (
        Annotated[SafeStr, StringConstraints(max_length=512, pattern=r"^sips?:\S+@\S+$")] | None
    ) = None
    description: Text | None = None
    mode: Literal["cold", "warm"] = "cold"
    handoff_provider: Name | None = None
    message: Text | None = None

    @model_validator(mode="after")
    def _one_target(self) -> Destination:
        if (self.number is None) == (self.sip is None):
            raise ValueError("needs exactly one of number (E.164) or sip (a SIP URI)")
        if self.number is not None:
            if not self.number.startswith("+"):
                raise ValueError("number must be E.164 (+ and digits)")
            normalize_number(self.number)
        return self


class _Tool(_Strict):
    name: Annotated[str, StringConstraints(pattern=TOOL_NAME)] | None = None
    description: Text | None = None


class EndCallTool(_Tool):
    type: Literal["end_call"]


class TransferCallTool(_Tool):
    type: Literal["transfer_call"]
    destinations: Annotated[list[Destination], Field(min_length=1, max_length=20)]


class SendDtmfTool(_Tool):
    type: Literal["send_dtmf"]


class ContactDataTool(_Tool):
    type: Literal["contact_data"]
    writable: bool = False


TableName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,63}$")]


class QueryTableTool(_Tool):
    type: Literal["query_table"]
    table: TableName
    columns: Annotated[
        list[Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,62}$")]],
        Field(max_length=200),
    ] = []


class InsertRecordTool(_Tool):
    type: Literal["insert_record"]
    table: TableName


def _http_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http or https URL")
    return value


def _json_schema(value: dict[str, Any]) -> dict[str, Any]:
    import orjson

    if len(orjson.dumps(value)) > MAX_PARAMETERS_BYTES:
        raise ValueError(f"must be at most {MAX_PARAMETERS_BYTES} bytes")
    if value.get("type", "object") != "object":
        raise ValueError('must be a JSON Schema of type "object"')
    try:
        jsonschema.Draft202012Validator.check_schema(value)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        raise ValueError(
            f"is not a valid JSON Schema{f' at {where}' if where else ''}: {exc.message[:200]}"
        ) from None
    return value


class FunctionTool(_Tool):
    type: Literal["function"]
    url: Annotated[SafeStr, StringConstraints(max_length=2048), AfterValidator(_http_url)]
    parameters: Annotated[dict[str, Any], AfterValidator(_json_schema)] = {"type": "object"}
    timeout_seconds: Annotated[int, Field(ge=1, le=30)] = 10
    speak_while_running: Text | None = None


class KnowledgeSearchTool(_Tool):
    type: Literal["knowledge_search"]
    knowledge_base_id: Annotated[str, StringConstraints(pattern=UUID_TEXT)]
    top_k: Annotated[int, Field(ge=1, le=20)] = 3


class Knowledge(_Strict):
    """``knowledge``: the knowledge base ``auto`` searches on each caller turn."""

    knowledge_base_id: Annotated[str, StringConstraints(pattern=UUID_TEXT)]
    auto: bool = False


Tool = Annotated[
    EndCallTool
    | TransferCallTool
    | SendDtmfTool
    | ContactDataTool
    | QueryTableTool
    | InsertRecordTool
    | FunctionTool
    | KnowledgeSearchTool,
    Field(discriminator="type"),
]
#: The ``type`` values the API accepts (the engine's tool registry must have exactly these).
TOOL_TYPES = (
    "end_call",
    "transfer_call",
    "send_dtmf",
    "contact_data",
    "query_table",
    "insert_record",
    "function",
    "knowledge_search",
)


class Voicemail(_Strict):
    action: Literal["hang_up", "leave_message"] = "hang_up"
    message: Annotated[SafeStr, StringConstraints(max_length=2_000)] | None = None

    @model_validator(mode="after")
    def _message_to_leave(self) -> Voicemail:
        if self.action == "leave_message" and not self.message:
            raise ValueError("leave_message needs a message")
        return self


def _unique_tool_names(tools: list[Any]) -> list[Any]:
    seen: set[str] = set()
    for tool in tools:
        name = tool.name or tool.type
        if name in seen:
            raise ValueError(f"tool names must be unique: {name} appears twice")
        seen.add(name)
    return tools


class AgentConfig(_Strict):
    """Every key of DESIGN §15's config."""

    prompt: Annotated[SafeStr, StringConstraints(max_length=100_000)] | None = None
    first_message: Annotated[SafeStr, StringConstraints(max_length=2_000)] | None = None
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
    summary_prompt: Annotated[SafeStr, StringConstraints(max_length=10_000)] | None = None
    analyzers: Annotated[list[Analyzer], Field(max_length=50)] = []
    knowledge: Knowledge | None = None


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


def tool_names(config: dict[str, Any]) -> list[str]:
    return [t["name"] for t in config.get("tools", [])]
