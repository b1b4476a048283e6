"""Voice queries. Core selects straight into wire models: these are hot read paths."""

from __future__ import annotations

import uuid

from sqlalchemy import bindparam
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.errors import NotFound
from callplane.kit.tenancy import select_owned
from callplane.models.voices import Voice as VoiceRow
from callplane.voices.schemas import Voice

# Plain Core columns, so these skip the ORM execution path.
_voices = VoiceRow.__table__
_LIST = select_owned(_voices, bindparam("org")).order_by(_voices.c.name, _voices.c.id)
_ONE = select_owned(_voices, bindparam("org")).where(_voices.c.id == bindparam("id"))


async def list_voices(session: AsyncSession, organization_id: int) -> list[Voice]:
    rows = (await session.execute(_LIST, {"org": organization_id})).mappings()
    return [Voice.model_validate(row) for row in rows]


async def get_voice(session: AsyncSession, organization_id: int, voice_id: uuid.UUID) -> Voice:
    row = (await session.execute(_ONE, {"org": organization_id, "id": voice_id})).mappings().first()
    if row is None:
        raise NotFound("Voice not found")
    return Voice.model_validate(row)
