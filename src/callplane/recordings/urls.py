"""Signed URLs of call recordings, used by the Call resource (``recording_presigned_url``)."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.kit.tenancy import select_owned
from callplane.models.external_calls import Recording
from callplane.recordings.service import sign_recordings
from callplane.runtime import Runtime


async def call_recording_urls(
    session: AsyncSession, runtime: Runtime, organization_id: int, call_ids: list[uuid.UUID]
) -> dict[uuid.UUID, str]:
    """Map each call id that has a playable recording to its signed URL (one query for all).

    A call with several recordings gets the earliest playable one (started_at, then id); a call
    whose signing fails is simply absent from the map.
    """
    if not call_ids:
        return {}
    rows = await session.scalars(
        select_owned(Recording, organization_id)
        .where(
            Recording.call_id.in_(list(dict.fromkeys(call_ids))),
            Recording.deleted.is_(False),
            Recording.excluded.is_(False),
            Recording.awaiting_redaction.is_(False),
            Recording.storage_key.is_not(None),
        )
        .order_by(Recording.started_at.is_(None), Recording.started_at, Recording.id)
    )
    first: dict[uuid.UUID, Recording] = {}
    for recording in rows:
        assert recording.call_id is not None
        first.setdefault(recording.call_id, recording)
    urls = await sign_recordings(runtime, first.values())
    return {call_id: urls[r.id] for call_id, r in first.items() if r.id in urls}
