"""Wire models of calls: the Call resource (SPEC), the create body and envelopes (DESIGN §6).

Responses are built as plain dicts (``service.call_wire``) and serialized by orjson; the models
here describe them in OpenAPI and validate what clients send.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from callplane.kit.e164 import phone_number

#: Bound on each free-form object a client sends (params, external_identifiers, cart, ...).
MAX_OBJECT_BYTES = 64 * 1024
MAX_KEY_CHARS = 255


def _check_text(value: str) -> str:
    # PostgreSQL cannot store NUL in text or jsonb, and a lone surrogate cannot be encoded to
    # UTF-8: both would fail deep in the driver, so they are refused as input instead.
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text") from None
    return value


def _walk_json(value: Any) -> int:
    """A size estimate of a free-form JSON value, in characters. Its other rules (depth,
    64-bit integers, finite numbers, no NUL) are the JSON value policy's (callplane.kit.jsonvalues),
    applied to request bodies and fixture documents before they get here."""
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, bool) or value is None:
        return 5
    if isinstance(value, int | float):
        return 24
    if isinstance(value, dict):
        return 2 + sum(len(key) + 3 + _walk_json(item) for key, item in value.items())
    if isinstance(value, list):
        return 2 + sum(_walk_json(item) + 1 for item in value)
    raise ValueError("is not a JSON value")


def check_json(value: Any) -> Any:
    if _walk_json(value) > MAX_OBJECT_BYTES:
        raise ValueError(f"is larger than {MAX_OBJECT_BYTES} bytes")
    return value


def _check_attributes(value: dict[str, Any]) -> dict[str, Any]:
    for key in value:
        if not key:
            raise ValueError("keys must not be empty")
        if len(key) > MAX_KEY_CHARS:
            raise ValueError(f"keys must be at most {MAX_KEY_CHARS} characters")
    check_json(value)
    return value


def normalize_number(value: str) -> str:
    """E.164 for a phone number (``callplane.kit.e164``: contact identifiers follow it too)."""
    return phone_number(value)


def _utc(value: datetime) -> datetime:
    # 0001-01-01T00:00:00+01:00 is a valid ISO 8601 text with no UTC equivalent: it is out of
    # range here rather than an overflow while binding the query.
    try:
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    except OverflowError:
        raise ValueError("must be a timestamp from 0001-01-01 to 9999-12-31 in UTC") from None


SafeStr = Annotated[str, AfterValidator(_check_text)]
#: A timestamp a client sends (a value without a zone is UTC), held in UTC.
UtcTimestamp = Annotated[datetime, AfterValidator(_utc)]
PhoneNumber = Annotated[str, StringConstraints(max_length=64), AfterValidator(normalize_number)]
JSONObject = Annotated[dict[str, Any], AfterValidator(check_json)]
Attributes = Annotated[dict[str, Any], AfterValidator(_check_attributes)]
ShortText = Annotated[SafeStr, StringConstraints(max_length=255)]
LongText = Annotated[SafeStr, StringConstraints(max_length=100_000)]


class TranscriptEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: LongText | None = None
    role: ShortText | None = None
    timestamp: float | None = Field(default=None, allow_inf_nan=False)
    function_name: ShortText | None = None
    arguments: JSONObject | None = None


class CallTagSummary(BaseModel):
    id: UUID
    name: str
    description: str | None
    color: str | None


class OutputConfig(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: ShortText
    properties: JSONObject = {}


class Analyzer(BaseModel):
    id: UUID | None = None
    prompt: LongText
    output_config: OutputConfig


class AnalysisResult(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: UUID | None = None
    analyzer_id: UUID | None = None
    prompt: str | None = None
    output_config: dict[str, Any] | None = None
    result: dict[str, Any] | None = None


class Call(BaseModel):
    """The Call resource, every field of SPEC's table."""

    id: UUID
    simple_uuid: UUID
    from_number: str | None
    to_number: str | None
    status: str
    started_at: datetime | None
    ended_at: datetime | None
    duration: int | None
    created_at: datetime
    updated_at: datetime
    transcripts: list[TranscriptEntry]
    screen_pop_token: str | None
    call_prompt: str | None
    answered_by: str | None
    language: str | None
    transferred: bool
    handoff_metadata: dict[str, Any] | None
    direction: str | None
    tags: list[CallTagSummary]
    voice_id: UUID | None
    agent_speaks_first: bool | None
    agent_id: UUID | None
    agent_branch: str | None
    agent_commit_id: str | None
    agent_branch_name: str | None
    external_identifiers: dict[str, Any]
    params: dict[str, Any]
    recording_presigned_url: str | None
    cart: dict[str, Any] | None
    analyzers: list[dict[str, Any]]
    analysis_results: list[AnalysisResult]
    summary: str | None
    keyterms: list[str]
    first_message: str | None = Field(
        description="Extension: what the agent says first when the call is answered"
    )


class SimulatedLine(BaseModel):
    """One line of the simulated person: said once the agent has spoken, ``after_ms`` of
    silence after the agent's line ends (positions in the recording)."""

    model_config = ConfigDict(extra="forbid")

    say: Annotated[SafeStr, StringConstraints(min_length=1, max_length=2_000)]
    after_ms: int = Field(default=400, ge=0, le=60_000, strict=True)


class Simulate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    script: Annotated[list[SimulatedLine], Field(min_length=1, max_length=100)] = Field(
        description="After 'Hello?', each line answers the agent's next line, in order; the "
        "person hangs up once the agent has answered the last one"
    )


class CallCreate(BaseModel):
    """Body of ``POST /calls``. An unknown field is a 422 naming it, as for agent commits: a
    misspelt ``first_mesage`` would otherwise place a call without its greeting."""

    model_config = ConfigDict(extra="forbid")

    to_number: PhoneNumber
    from_number: PhoneNumber | None = None
    agent_id: UUID | None = None
    agent_branch_name: Annotated[SafeStr, StringConstraints(min_length=1, max_length=63)] | None = (
        Field(default=None, description="The branch of agent_id whose head the call runs [main]")
    )
    agent_commit_id: UUID | None = Field(
        default=None, description="Instead of a branch: the commit of agent_id the call runs"
    )
    voice_id: UUID | None = None
    call_prompt: LongText | None = None
    language: Annotated[SafeStr, StringConstraints(max_length=32)] | None = None
    agent_speaks_first: bool | None = Field(default=None, strict=True)
    first_message: Annotated[SafeStr, StringConstraints(max_length=10_000)] | None = None
    params: Attributes = {}
    external_identifiers: Attributes = {}
    keyterms: Annotated[
        list[Annotated[SafeStr, StringConstraints(max_length=255)]], Field(max_length=500)
    ] = []
    analyzers: Annotated[list[Analyzer], Field(max_length=50)] = []
    tags: Annotated[list[UUID], Field(max_length=100)] = []
    simulate: Simulate | None = Field(
        default=None,
        description="Extension, simulated network only: what the person who answers says",
    )


class CallCreated(BaseModel):
    success: Literal[True] = True
    status: str
    call_id: UUID
    call: Call


class CallEnvelope(BaseModel):
    success: Literal[True] = True
    call: Call


class CallList(BaseModel):
    calls: list[Call]
    total_count: int
    page: int
    page_size: int
    total_pages: int


class CallEvent(BaseModel):
    sequence: int = Field(description="1, 2, 3... per call, in the order of the moves")
    type: str = Field(description="call.dialing, call.in_progress, call.ended, call.cancelled")
    at: datetime
    data: dict[str, Any] = Field(description="`status` after the move, and what it recorded")


class CallEventList(BaseModel):
    events: list[CallEvent]


class Cancelled(BaseModel):
    success: Literal[True] = True
    status: Literal["cancelled"] = "cancelled"
    uuid: UUID


class FoundCall(BaseModel):
    success: Literal[True] = True
    call: dict[str, Any] = Field(
        description="The full Call, or only the requested fields when `fields` is given"
    )
