from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StringConstraints


class CallTag(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: UUID
    uuid: UUID
    name: str
    description: str | None
    color: str | None
    always_enabled: bool
    created_at: datetime
    updated_at: datetime


class CallTagList(BaseModel):
    call_tags: list[CallTag]
    total_count: int
    page: int
    page_size: int
    total_pages: int


class CallTagCreate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=255)]
    description: Annotated[str, StringConstraints(max_length=2000)] | None = None
    color: Annotated[str, StringConstraints(strip_whitespace=True, max_length=32)] | None = None
    always_enabled: bool = Field(default=False, strict=True)
