"""Wire models of SPEC's External call and Recording."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, Field


class TranscriptEntry(BaseModel):
    speaker: str | None = None
    text: str
    start: float | None = None
    end: float | None = None
    confidence: float | None = None
    channel: str | None = None
    #: The language the recogniser heard (ISO 639-1), null when it could not tell.
    language: str | None = None


class Recording(BaseModel):
    id: UUID
    file_name: str
    status: str
    started_at: datetime | None
    transcript: list[TranscriptEntry] | None = Field(
        description="null while processing is incomplete"
    )
    summary: str | None = Field(description="null while processing is incomplete")
    created_at: datetime
    updated_at: datetime
    error: str | None = Field(
        default=None, description="Why the leg is in error (an extension); null otherwise"
    )


class Source(BaseModel):
    id: UUID | None
    name: str | None
    provider: str | None


class ExternalCall(BaseModel):
    id: UUID
    external_call_id: str | None
    title: str | None
    direction: Literal["inbound", "outbound"]
    from_number: str | None
    to_number: str | None
    duration_seconds: int | None
    started_at: datetime | None
    status: Literal["processing", "transcribed", "error"]
    recording_count: int = Field(ge=0, description="visible recording legs")
    source: Source | None
    created_at: datetime
    updated_at: datetime
    recording_presigned_urls: list[str] = Field(
        description="one temporary URL per playable leg, chronological; valid for one hour"
    )
    recordings: list[Recording] = Field(description="visible legs, chronological")


class ExternalCallList(BaseModel):
    external_calls: list[ExternalCall]
    total_count: int
    page: int
    page_size: int
    total_pages: int


class SourceIn(BaseModel):
    id: UUID | None = None
    name: str | None = Field(default=None, max_length=255)
    provider: str | None = Field(default=None, max_length=255)


class ExternalCallCreate(BaseModel):
    """Body of POST /external_calls (docs/api-contract.md#external-calls). Unknown fields are
    ignored."""

    external_call_id: str | None = Field(default=None, max_length=255)
    title: str | None = Field(default=None, max_length=500)
    direction: Literal["inbound", "outbound"] = "inbound"
    from_number: str | None = Field(default=None, max_length=64)
    to_number: str | None = Field(default=None, max_length=64)
    started_at: datetime | None = None
    source: SourceIn | None = None
