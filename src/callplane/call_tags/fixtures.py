"""Fixture section: call tags."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from callplane.fixtures import LoadContext, parse_items, section
from callplane.models.base import utcnow
from callplane.models.call_tags import CallTag


class CallTagItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: uuid.UUID | None = None
    name: str = Field(min_length=1, max_length=255)
    description: str | None = None
    color: str | None = Field(default=None, max_length=32)
    always_enabled: bool = False
    created_at: datetime | None = None


@section("call_tags")
async def load_call_tags(context: LoadContext, items: list[Any]) -> list[Any]:
    tags = [
        CallTag(
            organization_id=context.organization_id,
            id=item.id or uuid.uuid4(),
            name=item.name,
            description=item.description,
            color=item.color,
            always_enabled=item.always_enabled,
            created_at=item.created_at or utcnow(),
            updated_at=item.created_at or utcnow(),
        )
        for item in parse_items("call_tags", items, CallTagItem)
    ]
    context.session.add_all(tags)
    return [str(t.id) for t in tags]
