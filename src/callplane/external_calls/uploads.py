"""Recording uploads: the request body streamed to storage, bounded, never held in memory.

The body is judged by the worker (``processing.py``), which decodes it: bytes that are not
audio of the declared type make the leg ``error`` rather than the upload fail, so a client
always gets a leg whose state says what became of its file (docs/api-contract.md#external-calls).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterable, AsyncIterator
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.errors import InvalidInput, PayloadTooLarge
from callplane.external_calls import service
from callplane.kit import wakeups
from callplane.media.storage import Storage, recording_key
from callplane.models.base import utcnow
from callplane.models.external_calls import Recording
from callplane.speech.decoding import media_format

#: The one media type stored for each format the upload may declare.
CANONICAL_TYPES = {
    "wav": "audio/wav",
    "mp3": "audio/mpeg",
    "ogg": "audio/ogg",
    "flac": "audio/flac",
}


def upload_media_type(content_type: str | None) -> str:
    """The canonical media type of a declared Content-Type, or a 422 naming the header."""
    found = media_format(content_type)
    if found is None:
        raise InvalidInput(
            "Content-Type must be audio/wav, audio/mpeg, audio/ogg or audio/flac",
            loc=("header", "content-type"),
            type_="content_type",
        )
    return CANONICAL_TYPES[found]


def check_declared_length(content_length: str | None, limit: int) -> None:
    if content_length is None:
        return
    if not content_length.isdigit():
        raise PayloadTooLarge("Invalid Content-Length")
    if int(content_length) > limit:
        raise PayloadTooLarge(f"Recording exceeds the limit of {limit} bytes")


async def bounded(chunks: AsyncIterable[bytes], limit: int) -> AsyncIterator[bytes]:
    """The chunks, or PayloadTooLarge as soon as their total passes ``limit``."""
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"Recording exceeds the limit of {limit} bytes")
        yield chunk


async def store_upload(
    storage: Storage,
    organization_id: int,
    chunks: AsyncIterable[bytes],
    media_type: str,
    limit: int,
) -> tuple[uuid.UUID, str, int]:
    """Stream an upload into storage under a new leg id: (leg id, storage key, size)."""
    leg_id = uuid.uuid4()
    key = recording_key(organization_id, leg_id)
    size = await storage.put_stream(key, bounded(chunks, limit), media_type)
    return leg_id, key, size


async def attach_leg(
    session: AsyncSession,
    storage: Storage,
    organization_id: int,
    external_call_id: uuid.UUID,
    *,
    leg_id: uuid.UUID,
    key: str,
    size: int,
    media_type: str,
    file_name: str | None,
    started_at: datetime | None,
    redact: bool,
) -> Recording:
    """Record a stored upload as a ``pending`` leg. The stored audio is removed again when the
    leg cannot be recorded (the call vanished, the database failed), so no orphan is left."""
    try:
        call = await service.lock_external_call(session, organization_id, external_call_id)
        now = utcnow()
        extension = next(f for f, t in CANONICAL_TYPES.items() if t == media_type)
        leg = Recording(
            organization_id=organization_id,
            id=leg_id,
            external_call_id=call.id,
            file_name=file_name or f"recording.{extension}",
            status="pending",
            started_at=started_at,
            storage_key=key,
            content_type=media_type,
            size_bytes=size,
            # SPEC rule 3: a leg that needs redaction has no URL until the redacted audio
            # has replaced the upload.
            awaiting_redaction=redact,
            created_at=now,
            updated_at=now,
        )
        added = await service.add_leg(session, call, leg)
        await wakeups.announce(session, wakeups.RECORDINGS)
        return added
    except BaseException:
        await storage.delete(key)
        raise
