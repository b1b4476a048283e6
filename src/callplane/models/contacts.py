"""Contact data: one JSON object of state per (organization, caller identifier).

A row outlives its data. DELETE and expiry clear ``data``/``expires_at`` but keep the row, so the
revision counter of an identifier never goes back (docs/api-contract.md#contact-data) and the next
PUT continues it.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from callplane.models.base import Base

#: Longest non-phone identifier (SPEC Limits); an E.164 number is at most 16 characters.
IDENTIFIER_MAX_LENGTH = 128


class Contact(Base):
    __tablename__ = "contacts"
    __table_args__ = (
        # GET /contacts pages by (created_at, identifier), which never change for a row.
        Index(
            "ix_contacts_organization_id_created_at_identifier",
            "organization_id",
            "created_at",
            "identifier",
        ),
        # The purge looks for expired rows of every organization at once, so this is the one
        # index that does not lead with organization_id (a non-unique index is fine per shard on
        # a distributed PostgreSQL too).
        Index("ix_contacts_expires_at", "expires_at"),
    )

    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    #: E.164 for phone numbers, the identifier verbatim otherwise; the ON CONFLICT target.
    identifier: Mapped[str] = mapped_column(String(IDENTIFIER_MAX_LENGTH), primary_key=True)
    #: The compact JSON text of the stored object, or NULL when deleted or purged. Kept as text,
    #: not JSON/JSONB: it is an opaque document that is never queried into, so it is written and
    #: returned without being parsed again, and its key order and exact numbers survive.
    data: Mapped[str | None] = mapped_column(Text, default=None)
    revision: Mapped[int] = mapped_column(Integer)
    #: NULL when the data does not expire; data past this instant reads as absent.
    expires_at: Mapped[datetime | None] = mapped_column(default=None)
    created_at: Mapped[datetime]
    #: Last PUT or DELETE (the purge leaves it alone); set explicitly, no ``onupdate``.
    updated_at: Mapped[datetime]
