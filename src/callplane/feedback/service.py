"""Feedback entries on call transcripts and their notes. Services flush, never commit."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, insert, literal
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.calls.service import CALL_NOT_FOUND, uuid_text
from callplane.errors import InvalidInput, NotFound
from callplane.kit.tenancy import select_owned, update_owned
from callplane.models.base import utcnow
from callplane.models.calls import Call, FeedbackEntry, FeedbackNote

FEEDBACK_NOT_FOUND = "Feedback not found"
#: SPEC: notes created with an API key are authored by the literal "API".
API_AUTHOR = "API"


def note_wire(note: Any) -> dict[str, Any]:
    return {
        "author_name": note.author_name,
        "note_text": note.note_text,
        "created_at": note.created_at,
    }


async def entries_wire(
    session: AsyncSession, organization_id: int, entries: Sequence[FeedbackEntry]
) -> list[dict[str, Any]]:
    """Wire form of entries with their notes, in creation order, loaded in one query."""
    notes: dict[uuid.UUID, list[dict[str, Any]]] = {e.id: [] for e in entries}
    if entries:
        rows = await session.execute(
            select_owned(
                FeedbackNote,
                organization_id,
                FeedbackNote.feedback_uuid,
                FeedbackNote.author_name,
                FeedbackNote.note_text,
                FeedbackNote.created_at,
            )
            .where(FeedbackNote.feedback_uuid.in_(list(notes)))
            .order_by(FeedbackNote.id)
        )
        for row in rows:
            notes[row.feedback_uuid].append(note_wire(row))
    return [
        {
            "uuid": uuid_text(e.id),
            "call_id": uuid_text(e.call_uuid),
            "transcript_index": e.transcript_index,
            "comment": e.comment,
            "resolved": e.resolved,
            "resolved_at": e.resolved_at,
            "notes": notes[e.id],
            "created_at": e.created_at,
            "updated_at": e.updated_at,
        }
        for e in entries
    ]


async def _call_transcript_length(
    session: AsyncSession, organization_id: int, call_uuid: uuid.UUID
) -> int:
    transcripts = (
        await session.execute(
            select_owned(Call, organization_id, Call.transcripts).where(Call.id == call_uuid)
        )
    ).first()
    if transcripts is None:
        raise NotFound(CALL_NOT_FOUND)
    return len(transcripts[0] or [])


async def list_feedback(
    session: AsyncSession, organization_id: int, call_uuid: uuid.UUID
) -> Sequence[FeedbackEntry]:
    exists = await session.scalar(
        select_owned(Call, organization_id, Call.id).where(Call.id == call_uuid)
    )
    if exists is None:
        raise NotFound(CALL_NOT_FOUND)
    rows = await session.scalars(
        select_owned(FeedbackEntry, organization_id)
        .where(FeedbackEntry.call_uuid == call_uuid)
        .order_by(FeedbackEntry.created_at, FeedbackEntry.id)
    )
    return rows.all()


async def create_feedback(
    session: AsyncSession,
    organization_id: int,
    call_uuid: uuid.UUID,
    *,
    transcript_index: int | None,
    comment: str,
) -> FeedbackEntry:
    length = await _call_transcript_length(session, organization_id, call_uuid)
    if transcript_index is not None and transcript_index >= length:
        # The entry points at one line of the transcript: that line must exist.
        raise InvalidInput(
            f"the call's transcript has {length} entries", loc=("body", "transcript_index")
        )
    now = utcnow()
    entry = FeedbackEntry(
        organization_id=organization_id,
        id=uuid.uuid4(),
        call_uuid=call_uuid,
        transcript_index=transcript_index,
        comment=comment,
        resolved=False,
        created_at=now,
        updated_at=now,
    )
    session.add(entry)
    await session.flush()
    return entry


async def resolve_feedback(
    session: AsyncSession, organization_id: int, feedback_uuid: uuid.UUID, resolved: bool
) -> FeedbackEntry:
    """Set resolved; resolved_at keeps the first time it was resolved until it is reopened."""
    now = utcnow()
    resolved_at = func.coalesce(FeedbackEntry.resolved_at, now) if resolved else literal(None)
    entry = await session.scalar(
        update_owned(FeedbackEntry, organization_id)
        .where(FeedbackEntry.id == feedback_uuid)
        .values(resolved=resolved, resolved_at=resolved_at, updated_at=now)
        .returning(FeedbackEntry)
        .execution_options(populate_existing=True)
    )
    if entry is None:
        raise NotFound(FEEDBACK_NOT_FOUND)
    return entry


async def get_feedback(
    session: AsyncSession, organization_id: int, feedback_uuid: uuid.UUID
) -> FeedbackEntry:
    entry: FeedbackEntry | None = await session.scalar(
        select_owned(FeedbackEntry, organization_id).where(FeedbackEntry.id == feedback_uuid)
    )
    if entry is None:
        raise NotFound(FEEDBACK_NOT_FOUND)
    return entry


async def add_note(
    session: AsyncSession, organization_id: int, feedback_uuid: uuid.UUID, note_text: str
) -> dict[str, Any]:
    """Insert a note only if the entry exists: one INSERT … SELECT from the entry's row.

    The entry itself is not touched: a note never changes ``resolved`` (SPEC).
    """
    now = utcnow()
    source = select_owned(
        FeedbackEntry,
        organization_id,
        FeedbackEntry.organization_id,
        FeedbackEntry.id,
        literal(API_AUTHOR),
        literal(note_text),
        literal(now, FeedbackNote.created_at.type),
    ).where(FeedbackEntry.id == feedback_uuid)
    inserted = (
        await session.execute(
            insert(FeedbackNote)
            .from_select(
                ["organization_id", "feedback_uuid", "author_name", "note_text", "created_at"],
                source,
            )
            .returning(FeedbackNote.author_name, FeedbackNote.note_text, FeedbackNote.created_at)
        )
    ).first()
    if inserted is None:
        raise NotFound(FEEDBACK_NOT_FOUND)
    return note_wire(inserted)
