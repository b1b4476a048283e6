"""Voices an organization's agents speak with."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from callplane.models.base import Base, utcnow


class Voice(Base):
    __tablename__ = "voices"
    # The list is ordered by name then id
    # (docs/api-contract.md#phone-numbers-voices-call-tags-feedback); the primary key serves the
    # point lookup.
    __table_args__ = (Index("ix_voices_organization_id_name_id", "organization_id", "name", "id"),)

    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(255))
    languages: Mapped[list[str]] = mapped_column(default=list)
    description: Mapped[str | None] = mapped_column(Text, default=None)
    tags: Mapped[list[str]] = mapped_column(default=list)
    #: "espeak-ng:en-us", "piper:en_US-joe-medium" (docs/voices.md); NULL: the server's default.
    engine: Mapped[str | None] = mapped_column(String(120), default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
