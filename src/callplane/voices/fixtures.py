"""Fixture section: voices."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from callplane.fixtures import LoadContext, parse_items, section
from callplane.models.base import utcnow
from callplane.models.voices import Voice
from callplane.speech.engines import parse_engine


class VoiceItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: uuid.UUID | None = None
    name: str = Field(min_length=1, max_length=255)
    languages: list[str] = []
    description: str | None = None
    tags: list[str] = []
    created_at: datetime | None = None
    engine: str | None = Field(default=None, max_length=120)

    @field_validator("engine")
    @classmethod
    def _engine_name(cls, value: str | None) -> str | None:
        # Its form only: a document may be loaded on a server with other voices installed.
        if value is not None:
            parse_engine(value)
        return value


@section("voices")
async def load_voices(context: LoadContext, items: list[Any]) -> list[Any]:
    voices = [
        Voice(
            organization_id=context.organization_id,
            id=item.id or uuid.uuid4(),
            name=item.name,
            languages=item.languages,
            description=item.description,
            tags=item.tags,
            engine=item.engine,
            created_at=item.created_at or utcnow(),
            updated_at=item.created_at or utcnow(),
        )
        for item in parse_items("voices", items, VoiceItem)
    ]
    context.session.add_all(voices)
    return [str(v.id) for v in voices]
