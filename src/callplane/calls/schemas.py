"""Wire models of calls: the Call resource (SPEC), the create body and envelopes
(docs/api-contract.md#extension-routes).

Responses are built as plain dicts (``service.call_wire``) and serialized by orjson; the models
here describe them in OpenAPI and validate what clients send.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from callplane.kit.schemas import (
    LANGUAGE_TAG,
    Analyzer,
    Attributes,
    JSONObject,
    LongText,
    PhoneNumber,
    SafeStr,
    ShortText,
)


class TranscriptEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: LongText | None = None
    role: ShortText | None = None
    timestamp: float | None = Field(default=None, allow_inf_nan=False)
    function_name: ShortText | None = None
    arguments: JSONObject | None = None
    #: The language the line was said in, on calls not in English (docs/languages.md).
    language: Annotated[str, StringConstraints(pattern=LANGUAGE_TAG)] | None = None
    #: The caller's "uh-huh" while the agent spoke: kept, never answered (docs/voices.md).
    backchannel: bool | None = None


class CallTagSummary(BaseModel):
    id: UUID
    name: str
    description: str | None
    color: str | None


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
    campaign_id: UUID | None = Field(
        default=None, description="Extension: the campaign this call is an attempt of"
    )
    transcript_deleted_at: datetime | None = Field(
        default=None,
        description="Extension: when retention deleted the call's recording and transcript "
        "text (the agent's retention_days)",
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
    ignore_suppression: bool = Field(
        default=False,
        strict=True,
        description="Call a number on the do-not-call list (a call the person asked for)",
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
