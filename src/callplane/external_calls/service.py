"""Reading external calls with their visible recording legs (SPEC GET /external_calls/{uuid})."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.errors import NotFound
from callplane.http.pagination import count, offset
from callplane.models.external_calls import ExternalCall, Recording

#: A leg's transcript and summary are shown once its processing is complete (SPEC rule 1).
PROCESSED_STATUS = "transcribed"


async def visible_legs(
    session: AsyncSession, organization_id: int, external_call_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, list[Recording]]:
    """Visible legs of several calls in one query, each call's list chronological.

    Chronological is started_at, then id; legs without a start time come last on both backends.
    """
    legs: dict[uuid.UUID, list[Recording]] = defaultdict(list)
    if not external_call_ids:
        return legs
    rows = await session.scalars(
        select(Recording)
        .where(
            Recording.organization_id == organization_id,
            Recording.external_call_id.in_(external_call_ids),
            Recording.deleted.is_(False),
            Recording.excluded.is_(False),
        )
        .order_by(Recording.started_at.is_(None), Recording.started_at, Recording.id)
    )
    for leg in rows:
        assert leg.external_call_id is not None
        legs[leg.external_call_id].append(leg)
    return legs


async def get_external_call(
    session: AsyncSession, organization_id: int, external_call_id: uuid.UUID
) -> tuple[ExternalCall, list[Recording]]:
    call = await session.get(ExternalCall, (organization_id, external_call_id))
    if call is None:
        raise NotFound("External call not found")
    legs = await visible_legs(session, organization_id, [call.id])
    return call, legs[call.id]


async def list_external_calls(
    session: AsyncSession, organization_id: int, page: int, page_size: int
) -> tuple[Sequence[ExternalCall], int, dict[uuid.UUID, list[Recording]]]:
    """A page of calls, newest first (created_at, then id), and the legs of all of them."""
    query = select(ExternalCall).where(ExternalCall.organization_id == organization_id)
    total = await count(session, query)
    calls = (
        await session.scalars(
            query.order_by(ExternalCall.created_at.desc(), ExternalCall.id.desc())
            .limit(page_size)
            .offset(offset(page, page_size))
        )
    ).all()
    legs = await visible_legs(session, organization_id, [c.id for c in calls])
    return calls, total, legs
