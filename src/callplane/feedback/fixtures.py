"""Fixture section: feedback entries (docs/api-contract.md#the-fixture-document), each on a call of
the same organization.

Besides the fields of docs/api-contract.md an item may carry ``notes`` (texts, or objects with
``note_text`` and optionally ``author_name`` and ``created_at``), so sample data can show notes too.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID, uuid4

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from sqlalchemy import select

from callplane.feedback.schemas import NoteText
from callplane.feedback.service import API_AUTHOR
from callplane.fixtures import LoadContext, LoadError, parse_items, section
from callplane.kit.schemas import SafeStr
from callplane.models.base import utcnow
from callplane.models.calls import Call, FeedbackEntry, FeedbackNote


class NoteItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    note_text: NoteText
    author_name: Annotated[SafeStr, StringConstraints(min_length=1, max_length=255)] = API_AUTHOR
    created_at: datetime | None = None


class FeedbackItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    uuid: UUID | None = None
    call_id: UUID
    transcript_index: int | None = Field(default=None, ge=0, le=2**31 - 1)
    comment: Annotated[SafeStr, StringConstraints(max_length=10_000)] | None = None
    resolved: bool = False
    resolved_at: datetime | None = None
    created_at: datetime | None = None
    notes: list[NoteText | NoteItem] = []


@section("feedback")
async def load_feedback(context: LoadContext, items: list[Any]) -> list[Any]:
    parsed = parse_items("feedback", items, FeedbackItem)
    wanted = {p.call_id for p in parsed}
    known = set(
        await context.session.scalars(
            select(Call.id).where(
                Call.organization_id == context.organization_id, Call.id.in_(wanted)
            )
        )
    )
    entries: list[FeedbackEntry] = []
    notes: list[FeedbackNote] = []
    for index, item in enumerate(parsed):
        if item.call_id not in known:
            raise LoadError(f"feedback[{index}].call_id: no call {item.call_id}")
        created_at = item.created_at or utcnow()
        entry = FeedbackEntry(
            organization_id=context.organization_id,
            id=item.uuid or uuid4(),
            call_uuid=item.call_id,
            transcript_index=item.transcript_index,
            comment=item.comment,
            resolved=item.resolved,
            resolved_at=(item.resolved_at or created_at) if item.resolved else None,
            created_at=created_at,
            updated_at=created_at,
        )
        entries.append(entry)
        for note in item.notes:
            note = note if isinstance(note, NoteItem) else NoteItem(note_text=note)
            notes.append(
                FeedbackNote(
                    organization_id=context.organization_id,
                    feedback_uuid=entry.id,
                    author_name=note.author_name,
                    note_text=note.note_text,
                    created_at=note.created_at or created_at,
                )
            )
    context.session.add_all(entries)
    await context.session.flush()
    context.session.add_all(notes)
    return [str(e.id) for e in entries]
