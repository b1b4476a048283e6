"""Recording lookups and the URLs handed out for them."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.kit.tenancy import across_organizations
from callplane.media.storage import recording_key
from callplane.models.external_calls import Recording
from callplane.runtime import Runtime

log = logging.getLogger("callplane.recordings")

_Id = TypeVar("_Id", uuid.UUID, str)


async def recordings_with_id(session: AsyncSession, recording_id: uuid.UUID) -> Sequence[Recording]:
    """Every organization's recording with this id (ids are only unique per organization; the
    signature, which covers the organization, decides which one a URL names)."""
    query = across_organizations(
        select(Recording).where(Recording.id == recording_id),
        "a signed URL carries no organization: the MAC, which covers it, picks the one it names",
    )
    return (await session.scalars(query)).all()


async def sign_recordings(
    runtime: Runtime, recordings: Iterable[Recording]
) -> dict[uuid.UUID, str]:
    """URLs of the playable recordings, by id. A recording whose signing fails is left out and
    logged; it never fails the request (SPEC GET /external_calls/{uuid} rule 3)."""
    return await sign_playable(
        runtime,
        [
            (r.organization_id, r.id, r.storage_key, r.content_type)
            for r in recordings
            if r.playable and r.storage_key is not None
        ],
    )


async def sign_rows(runtime: Runtime, legs: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """``sign_recordings`` of visible legs read as rows (``external_calls.service``: ids as
    text), by id."""
    return await sign_playable(
        runtime,
        [
            (leg["organization_id"], leg["id"], leg["storage_key"], leg["content_type"])
            for leg in legs
            if not leg["awaiting_redaction"] and leg["storage_key"] is not None
        ],
    )


async def sign_playable(
    runtime: Runtime, playable: Sequence[tuple[int, _Id, str, str]]
) -> dict[_Id, str]:
    """URLs of recordings given as (organization, id, storage key, content type), by id."""
    if not playable:
        return {}
    try:
        secret = await runtime.signer.secret(runtime.db)
    except Exception:
        log.exception("recording signing key unavailable")
        return {}
    urls: dict[_Id, str] = {}
    signer, storage = runtime.signer, runtime.storage
    expires = signer.expiry()
    for organization_id, recording_id, storage_key, content_type in playable:
        try:
            urls[recording_id] = signer.url(
                storage, secret, organization_id, recording_id, storage_key, content_type, expires
            )
        except Exception:
            log.warning(
                "recording URL signing failed",
                exc_info=True,
                extra={"recording_id": str(recording_id)},
            )
    return urls


_EXTENSIONS = {"audio/wav": "wav", "audio/mpeg": "mp3", "audio/ogg": "ogg", "audio/flac": "flac"}


async def store_call_recording(
    runtime: Runtime,
    organization_id: int,
    call_id: uuid.UUID,
    content_type: str,
    data: bytes,
    started_at: datetime | None,
) -> uuid.UUID:
    """Keep the audio of a platform call; the Call's ``recording_presigned_url`` then serves it.

    The bytes go to storage first and the row is committed after, in its own short
    transaction: a reader never finds a row whose audio is missing.
    """
    row = await put_call_recording(
        runtime, organization_id, call_id, content_type, data, started_at
    )
    async with runtime.db.session(write=True) as session:
        session.add(Recording(**row))
        await session.commit()
    return uuid.UUID(str(row["id"]))


async def put_call_recording(
    runtime: Runtime,
    organization_id: int,
    call_id: uuid.UUID,
    content_type: str,
    data: bytes,
    started_at: datetime | None,
) -> dict[str, Any]:
    """Store a platform call's audio; the ``recordings`` row to insert once it is there (the
    engine inserts it with the call's completion)."""
    recording_id = uuid.uuid4()
    key = recording_key(organization_id, recording_id)
    await runtime.storage.put(key, data, content_type)
    return {
        "organization_id": organization_id,
        "id": recording_id,
        "call_id": call_id,
        "file_name": f"call-{call_id}.{_EXTENSIONS.get(content_type, 'bin')}",
        # The call carries its own transcript: nothing is left for the transcriber.
        "status": "transcribed",
        "started_at": started_at,
        "storage_key": key,
        "content_type": content_type,
        "size_bytes": len(data),
    }
