"""Page arithmetic shared by the paginated lists."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession


def total_pages(total_count: int, page_size: int) -> int:
    return -(-total_count // page_size) if page_size > 0 else 0


def offset(page: int, page_size: int) -> int:
    return (page - 1) * page_size


async def count(session: AsyncSession, query: Select[Any]) -> int:
    """Rows a filtered query would return (ordering and paging stripped)."""
    counted = select(func.count()).select_from(query.order_by(None).subquery())
    return int((await session.execute(counted)).scalar_one())
