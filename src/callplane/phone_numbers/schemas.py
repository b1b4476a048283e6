from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import BaseModel


class AgentRef(BaseModel):
    id: int
    name: str
    uuid: UUID


class PhoneNumber(BaseModel):
    id: UUID
    number: str
    friendly_name: str | None
    area_code: str | None
    country: str | None
    created_at: datetime
    updated_at: datetime
    agent: AgentRef | None


class PhoneNumberUpdate(BaseModel):
    friendly_name: str
