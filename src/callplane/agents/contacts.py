"""The other party's contact data as variables read it (docs/agents.md): its top-level keys."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import or_
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.kit.tenancy import select_owned
from callplane.models.base import utcnow
from callplane.models.contacts import Contact


async def contact_data(
    session: AsyncSession, organization_id: int, identifier: str | None
) -> dict[str, Any]:
    """The live (unexpired) data of a contact, or {} when there is none."""
    if not identifier:
        return {}
    text = await session.scalar(
        select_owned(Contact, organization_id, Contact.data).where(
            Contact.identifier == identifier,
            or_(Contact.expires_at.is_(None), Contact.expires_at > utcnow()),
        )
    )
    if not text:
        return {}
    data = orjson.loads(text)
    return data if isinstance(data, dict) else {}
