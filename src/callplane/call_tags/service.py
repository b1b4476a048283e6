from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.kit.pagination import count, offset
from callplane.kit.tenancy import select_owned
from callplane.models.call_tags import CallTag


async def list_call_tags(
    session: AsyncSession, organization_id: int, page: int, page_size: int
) -> tuple[Sequence[CallTag], int]:
    query = select_owned(CallTag, organization_id)
    total = await count(session, query)
    rows = await session.scalars(
        query.order_by(CallTag.created_at, CallTag.id)
        .limit(page_size)
        .offset(offset(page, page_size))
    )
    return rows.all(), total


async def create_call_tag(
    session: AsyncSession,
    organization_id: int,
    *,
    name: str,
    description: str | None,
    color: str | None,
    always_enabled: bool,
) -> CallTag:
    tag = CallTag(
        organization_id=organization_id,
        name=name,
        description=description,
        color=color,
        always_enabled=always_enabled,
    )
    session.add(tag)
    await session.flush()
    return tag
