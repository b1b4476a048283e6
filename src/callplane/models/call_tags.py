"""Call tags: labels an organization puts on calls."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from callplane.models.base import Base, utcnow


class CallTag(Base):
    __tablename__ = "call_tags"
    # The list is paginated in (created_at, id) order
    # (docs/api-contract.md#phone-numbers-voices-call-tags-feedback).
    __table_args__ = (
        Index("ix_call_tags_organization_id_created_at_id", "organization_id", "created_at", "id"),
    )

    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(255))
    description: Mapped[str | None] = mapped_column(Text, default=None)
    color: Mapped[str | None] = mapped_column(String(32), default=None)
    always_enabled: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
