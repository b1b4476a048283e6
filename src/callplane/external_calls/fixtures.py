"""Fixture sections: external calls with their recording legs, and recordings of platform calls.

Audio arrives as base64 and is written through the configured storage (CALLPLANE_STORAGE_URL)
under a key made of the organization and recording ids, after the rows are flushed: a recording
id that already exists is refused by the database before any audio could be overwritten.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select

from callplane.external_calls.schemas import TranscriptEntry
from callplane.fixtures import LoadContext, LoadError, parse_items, section
from callplane.media.storage import Storage, recording_key, storage_from_settings
from callplane.models.base import utcnow
from callplane.models.calls import Call
from callplane.models.external_calls import ExternalCall, Recording

#: States of a recording leg: SPEC names only "pending"; transcript and summary are shown once
#: a leg is "transcribed".
LEG_STATUSES = ("pending", "processing", "transcribed", "error")
MAX_AUDIO_BYTES = 100 * 1024 * 1024

_AUDIO_TYPE = r"^(audio/[a-z0-9][a-z0-9.+-]{0,100}|application/octet-stream)$"
_EXTENSIONS = {
    "audio/wav": ".wav",
    "audio/mpeg": ".mp3",
    "audio/ogg": ".ogg",
    "audio/mp4": ".m4a",
    "audio/webm": ".webm",
    "audio/flac": ".flac",
}
_TYPES = {ext: media for media, ext in _EXTENSIONS.items()}


class SourceItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: uuid.UUID | None = None
    name: str | None = Field(default=None, max_length=255)
    provider: str | None = Field(default=None, max_length=255)


class AudioItem(BaseModel):
    id: uuid.UUID | None = None
    file_name: str | None = Field(default=None, min_length=1, max_length=255)
    started_at: datetime | None = None
    audio_base64: str | None = Field(default=None, max_length=MAX_AUDIO_BYTES * 4 // 3 + 4)
    content_type: str | None = Field(default=None, pattern=_AUDIO_TYPE)
    created_at: datetime | None = None

    def media_type(self) -> str:
        if self.content_type:
            return self.content_type
        ext = "." + (self.file_name or "").rsplit(".", 1)[-1].lower()
        return _TYPES.get(ext, "audio/wav")

    def audio(self, where: str) -> bytes | None:
        if self.audio_base64 is None:
            return None
        try:
            return base64.b64decode(self.audio_base64, validate=True)
        except (binascii.Error, ValueError):
            raise LoadError(f"{where}.audio_base64: not valid base64") from None


class LegItem(AudioItem):
    model_config = ConfigDict(extra="forbid")

    status: Literal["pending", "processing", "transcribed", "error"] | None = None
    transcript: list[TranscriptEntry] | None = None
    summary: str | None = Field(default=None, max_length=100_000)
    awaiting_redaction: bool = False
    deleted: bool = False
    excluded: bool = False


class ExternalCallItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: uuid.UUID | None = None
    external_call_id: str | None = Field(default=None, max_length=255)
    title: str | None = Field(default=None, max_length=500)
    direction: Literal["inbound", "outbound"] = "inbound"
    from_number: str | None = Field(default=None, max_length=64)
    to_number: str | None = Field(default=None, max_length=64)
    duration_seconds: int | None = Field(default=None, ge=0, le=10**9)
    started_at: datetime | None = None
    status: Literal["processing", "transcribed", "error"] = "processing"
    source: SourceItem | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    # Derived on every read; accepted so an exported External call loads as it is.
    recording_count: int | None = None
    recording_presigned_urls: list[str] | None = None
    recordings: list[LegItem] = []


class CallRecordingItem(AudioItem):
    model_config = ConfigDict(extra="forbid")

    call_id: uuid.UUID


def _storage(context: LoadContext) -> Storage:
    storage: Storage | None = context.memo.get("storage")
    if storage is None:
        storage = context.memo["storage"] = storage_from_settings(context.settings)
    return storage


def _recording(
    context: LoadContext,
    item: AudioItem,
    where: str,
    pending: list[tuple[str, bytes, str]],
    created_at: datetime | None = None,
) -> Recording:
    recording_id = item.id or uuid.uuid4()
    media_type = item.media_type()
    audio = item.audio(where)
    key = None
    if audio is not None:
        key = recording_key(context.organization_id, recording_id)
        pending.append((key, audio, media_type))
    created = item.created_at or created_at or utcnow()
    return Recording(
        organization_id=context.organization_id,
        id=recording_id,
        file_name=item.file_name or "recording" + _EXTENSIONS.get(media_type, ""),
        started_at=item.started_at,
        storage_key=key,
        content_type=media_type,
        size_bytes=len(audio) if audio is not None else None,
        created_at=created,
        updated_at=created,
    )


async def _store(context: LoadContext, pending: list[tuple[str, bytes, str]]) -> None:
    # Rows first: a duplicate id fails here, before its audio could replace existing audio.
    await context.session.flush()
    storage = _storage(context)
    for key, audio, media_type in pending:
        await storage.put(key, audio, media_type)


@section("external_calls")
async def load_external_calls(context: LoadContext, items: list[Any]) -> list[Any]:
    parsed = parse_items("external_calls", items, ExternalCallItem)
    pending: list[tuple[str, bytes, str]] = []
    calls: list[ExternalCall] = []
    legs: list[Recording] = []
    for index, item in enumerate(parsed):
        now = utcnow()
        call = ExternalCall(
            organization_id=context.organization_id,
            id=item.id or uuid.uuid4(),
            external_call_id=item.external_call_id,
            title=item.title,
            direction=item.direction,
            from_number=item.from_number,
            to_number=item.to_number,
            duration_seconds=item.duration_seconds,
            started_at=item.started_at,
            status=item.status,
            source_id=item.source.id if item.source else None,
            source_name=item.source.name if item.source else None,
            source_provider=item.source.provider if item.source else None,
            created_at=item.created_at or now,
            updated_at=item.updated_at or item.created_at or now,
        )
        calls.append(call)
        for leg_index, leg in enumerate(item.recordings):
            where = f"external_calls[{index}].recordings[{leg_index}]"
            # A leg without its own timestamps was imported with its call.
            recording = _recording(context, leg, where, pending, call.created_at)
            recording.external_call_id = call.id
            # Without a status, a leg that comes with its transcript is a processed one.
            recording.status = leg.status or (
                "transcribed" if leg.transcript is not None else "pending"
            )
            recording.transcript = (
                [_entry(t) for t in leg.transcript] if leg.transcript is not None else None
            )
            recording.summary = leg.summary
            recording.awaiting_redaction = leg.awaiting_redaction
            recording.deleted = leg.deleted
            recording.excluded = leg.excluded
            legs.append(recording)
    # The parent rows first: the legs' composite foreign key refers to them.
    context.session.add_all(calls)
    await context.session.flush()
    context.session.add_all(legs)
    await _store(context, pending)
    return [str(c.id) for c in calls]


@section("call_recordings")
async def load_call_recordings(context: LoadContext, items: list[Any]) -> list[Any]:
    parsed = parse_items("call_recordings", items, CallRecordingItem)
    await _check_calls(context, [item.call_id for item in parsed])
    pending: list[tuple[str, bytes, str]] = []
    recordings = []
    for index, item in enumerate(parsed):
        recording = _recording(context, item, f"call_recordings[{index}]", pending)
        recording.call_id = item.call_id
        recording.status = "transcribed"
        recordings.append(recording)
    context.session.add_all(recordings)
    await _store(context, pending)
    return [str(r.id) for r in recordings]


async def _check_calls(context: LoadContext, call_ids: list[uuid.UUID]) -> None:
    """Every call_id must name a call of the organization (a clear error, not an FK failure)."""
    known = set(
        await context.session.scalars(
            select(Call.id).where(
                Call.organization_id == context.organization_id,
                Call.id.in_(set(call_ids)),
            )
        )
    )
    for index, call_id in enumerate(call_ids):
        if call_id not in known:
            raise LoadError(f"call_recordings[{index}].call_id: no call {call_id}")


def _entry(entry: TranscriptEntry) -> dict[str, object]:
    """A loaded transcript entry as stored: ``language`` only when the document names one (the
    recogniser adds it to what it hears; a document's entries keep SPEC's shape)."""
    return entry.model_dump(exclude={"language"} if entry.language is None else None)
