from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints


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
    #: ``"espeak-ng:en-us"``, ``"piper:en_US-joe-medium"``; ``null``: the server's default.
    engine: str | None = None


_Short = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]


class VoiceCreate(BaseModel):
    """POST /voices (docs/voices.md)."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=255)]
    languages: list[_Short] = Field(default=[], max_length=20)
    description: Annotated[str, StringConstraints(max_length=2000)] | None = None
    tags: list[_Short] = Field(default=[], max_length=20)
    engine: Annotated[str, StringConstraints(min_length=1, max_length=120)]


class VoiceDeleted(BaseModel):
    success: bool = True


class Engine(BaseModel):
    """One speech engine installed on this server (``callplane voices engines``)."""

    name: str
    program: str
    voice: str
    source: str
    #: The language tag the voice speaks, when its name says it.
    language: str | None = None
