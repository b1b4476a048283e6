"""Reading external calls with their visible recording legs (SPEC GET /external_calls/{uuid})."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.errors import NotFound
from callplane.models.base import utcnow
from callplane.models.external_calls import ExternalCall, Recording
from callplane.pagination import count, offset
from callplane.tenancy import select_owned

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
        select_owned(Recording, organization_id)
        .where(
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
    query = select_owned(ExternalCall, organization_id)
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


async def create_external_call(
    session: AsyncSession, organization_id: int, fields: dict[str, Any]
) -> ExternalCall:
    """A new session with no legs: ``processing`` until legs arrive and are transcribed."""
    source = fields.pop("source", None) or {}
    call = ExternalCall(organization_id=organization_id, status="processing", **fields)
    if source:
        call.source_id = source.get("id") or uuid.uuid4()
        call.source_name = source.get("name")
        call.source_provider = source.get("provider")
    session.add(call)
    await session.flush()
    return call


async def lock_external_call(
    session: AsyncSession, organization_id: int, external_call_id: uuid.UUID
) -> ExternalCall:
    """The call, its row locked for the rest of the transaction (PostgreSQL; SQLite's writers
    are serialized anyway): every change of a leg and the recomputation of the call's status
    happen under it, so two legs finishing at once cannot both miss each other."""
    call: ExternalCall | None = await session.scalar(
        select(ExternalCall)
        .where(
            ExternalCall.organization_id == organization_id,
            ExternalCall.id == external_call_id,
        )
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if call is None:
        raise NotFound("External call not found")
    return call


async def add_leg(session: AsyncSession, call: ExternalCall, leg: Recording) -> Recording:
    """Attach a stored upload as a new ``pending`` leg; the call is processing again."""
    session.add(leg)
    await session.flush()
    await refresh_call(session, call)
    return leg


def derived_status(legs: Sequence[Recording], current: str) -> str:
    """DESIGN §12: ``error`` if any visible leg failed, ``transcribed`` once every visible leg
    is; otherwise ``processing``. A call without legs keeps its status."""
    if not legs:
        return current
    statuses = {leg.status for leg in legs}
    if "error" in statuses:
        return "error"
    if statuses == {PROCESSED_STATUS}:
        return PROCESSED_STATUS
    return "processing"


async def refresh_call(session: AsyncSession, call: ExternalCall) -> None:
    """Recompute the call's status and duration from its visible legs (call row locked).

    ``duration_seconds`` is the sum of the legs' decoded lengths, rounded; while no leg has a
    known length (legs imported without one), an imported duration is kept.
    """
    legs = (await visible_legs(session, call.organization_id, [call.id]))[call.id]
    call.status = derived_status(legs, call.status)
    lengths = [leg.duration_seconds for leg in legs if leg.duration_seconds is not None]
    if lengths:
        call.duration_seconds = round(sum(lengths))
    call.updated_at = utcnow()
    await session.flush()
