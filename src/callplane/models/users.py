"""People who sign in to the dashboard (README.md#the-dashboard).

An email names one person across the whole deployment (sign-in has nothing else to go by), so its
unique index is the one index here that does not lead with organization_id.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from callplane.models.base import Base, utcnow

EMAIL_MAX_LENGTH = 254


class User(Base):
    __tablename__ = "users"
    __table_args__ = (
        Index("ix_users_organization_id", "organization_id"),
        Index("uq_users_email", "email", unique=True),
    )

    organization_id: Mapped[int] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    id: Mapped[int] = mapped_column(primary_key=True)
    #: Lower-cased, so sign-in does not depend on how the address was typed.
    email: Mapped[str] = mapped_column(String(EMAIL_MAX_LENGTH))
    #: An argon2id hash in PHC string form (parameters included, so they can be raised later).
    password_hash: Mapped[str] = mapped_column(Text)
    #: Part of every session cookie; bumping it signs the person out everywhere (sign-out,
    #: password change).
    session_version: Mapped[int] = mapped_column(Integer, default=0)
    #: owner, admin, member or viewer (``users.roles``)
    role: Mapped[str] = mapped_column(String(16), default="owner", server_default="owner")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
