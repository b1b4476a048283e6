"""Signed URLs of call recordings, used by the Call resource (to be filled in by issue 6)."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.runtime import Runtime


async def call_recording_urls(
    session: AsyncSession, runtime: Runtime, organization_id: int, call_ids: list[uuid.UUID]
) -> dict[uuid.UUID, str]:
    """Map each call id that has a playable recording to its signed URL (one query for all)."""
    return {}
