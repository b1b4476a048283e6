"""Agents: referenced by calls and phone numbers; not managed through v1."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from callplane.models.base import Base, utcnow


class Agent(Base):
    __tablename__ = "agents"
    __table_args__ = (
        Index("ix_agents_organization_id_uuid", "organization_id", "uuid", unique=True),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    organization_id: Mapped[int] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    uuid: Mapped[uuid.UUID] = mapped_column(default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
