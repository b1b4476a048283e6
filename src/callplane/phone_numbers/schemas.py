from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import BaseModel, Field


class AgentRef(BaseModel):
    id: int
    name: str
    uuid: UUID
    branch: str | None = Field(description="The branch whose head inbound calls run")


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
    friendly_name: str | None = None
    agent_id: UUID | None = Field(default=None, description="Route to this agent; null: unroute")
    agent_branch_name: str | None = Field(default=None, description="[main]")


class PhoneNumberCreate(BaseModel):
    number: str = Field(description="E.164; unique across every organization")
    friendly_name: str | None = None
    agent_id: UUID | None = None
    agent_branch_name: str | None = None


class PhoneNumberList(BaseModel):
    numbers: list[PhoneNumber]


class Deleted(BaseModel):
    success: bool = True
