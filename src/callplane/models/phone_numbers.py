"""Phone numbers owned by an organization, optionally routed to an agent."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from callplane.models.base import Base, utcnow


class PhoneNumber(Base):
    __tablename__ = "phone_numbers"
    # A number rings in one place: POST /numbers refuses one that exists in any organization
    # (``phone_numbers.routing``). Not a unique index: the demo document loads the same numbers
    # into any organization (``callplane demo --org``), which operators rely on.
    __table_args__ = (Index("ix_phone_numbers_number", "number"),)

    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    number: Mapped[str] = mapped_column(String(32))
    friendly_name: Mapped[str | None] = mapped_column(String(255), default=None)
    area_code: Mapped[str | None] = mapped_column(String(16), default=None)
    country: Mapped[str | None] = mapped_column(String(8), default=None)
    agent_id: Mapped[int | None] = mapped_column(
        ForeignKey("agents.id", ondelete="SET NULL"), default=None, index=True
    )
    #: The branch of the agent an inbound call runs (its head at answer time).
    agent_branch_name: Mapped[str | None] = mapped_column(String(63), default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
