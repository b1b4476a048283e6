from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.errors import NotFound
from callplane.models.voices import Voice


async def list_voices(session: AsyncSession, organization_id: int) -> Sequence[Voice]:
    query = (
        select(Voice).where(Voice.organization_id == organization_id).order_by(Voice.name, Voice.id)
    )
    return (await session.scalars(query)).all()


async def get_voice(session: AsyncSession, organization_id: int, voice_id: uuid.UUID) -> Voice:
    voice = await session.get(Voice, (organization_id, voice_id))
    if voice is None:
        raise NotFound("Voice not found")
    return voice
