"""Wire models of feedback entries and notes (SPEC: Feedback note; docs/api-contract.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from callplane.kit.schemas import SafeStr

#: docs/api-contract.md#phone-numbers-voices-call-tags-feedback: a note is 1–10,000 characters (kept
#: exactly as sent).
NoteText = Annotated[SafeStr, StringConstraints(min_length=1, max_length=10_000)]


class FeedbackNote(BaseModel):
    author_name: str
    note_text: str
    created_at: datetime


class FeedbackEntry(BaseModel):
    uuid: UUID
    call_id: UUID
    transcript_index: int | None
    comment: str | None
    resolved: bool
    resolved_at: datetime | None
    notes: list[FeedbackNote]
    created_at: datetime
    updated_at: datetime


class FeedbackCreate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    transcript_index: int | None = Field(default=None, ge=0, le=2**31 - 1, strict=True)
    comment: Annotated[SafeStr, StringConstraints(min_length=1, max_length=10_000)]


class FeedbackResolve(BaseModel):
    model_config = ConfigDict(extra="ignore")

    resolved: bool = Field(strict=True)


class NoteCreate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    note: NoteText


class FeedbackList(BaseModel):
    feedback: list[FeedbackEntry]


class FeedbackEnvelope(BaseModel):
    success: Literal[True] = True
    feedback: FeedbackEntry


class NoteAdded(BaseModel):
    success: Literal[True] = True
    feedback_uuid: UUID
    note: FeedbackNote
