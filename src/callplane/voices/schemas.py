from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict


class Voice(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    name: str
    languages: list[str]
    organization_id: int
    created_at: datetime
    updated_at: datetime
    description: str | None
    tags: list[str]
