"""Recording lookups and the URLs handed out for them."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.models.external_calls import Recording
from callplane.runtime import Runtime

log = logging.getLogger("callplane.recordings")


async def recordings_with_id(session: AsyncSession, recording_id: uuid.UUID) -> Sequence[Recording]:
    """Every organization's recording with this id (ids are only unique per organization; the
    signature, which covers the organization, decides which one a URL names)."""
    return (await session.scalars(select(Recording).where(Recording.id == recording_id))).all()


async def sign_recordings(
    runtime: Runtime, recordings: Iterable[Recording]
) -> dict[uuid.UUID, str]:
    """URLs of the playable recordings, by id. A recording whose signing fails is left out and
    logged; it never fails the request (SPEC GET /external_calls/{uuid} rule 3)."""
    playable = [r for r in recordings if r.playable]
    if not playable:
        return {}
    try:
        secret = await runtime.signer.secret(runtime.db)
    except Exception:
        log.exception("recording signing key unavailable")
        return {}
    urls: dict[uuid.UUID, str] = {}
    for recording in playable:
        assert recording.storage_key is not None
        try:
            urls[recording.id] = runtime.signer.url(
                runtime.storage,
                secret,
                recording.organization_id,
                recording.id,
                recording.storage_key,
                recording.content_type,
            )
        except Exception:
            log.warning(
                "recording URL signing failed",
                exc_info=True,
                extra={"recording_id": str(recording.id)},
            )
    return urls
