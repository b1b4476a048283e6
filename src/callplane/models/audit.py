"""The audit log: one hash chain of events per organization (``callplane.audit``).

``seq`` numbers an organization's events 1, 2, 3… with no gap, and each ``hash`` covers the one
before it, so a changed, removed or inserted event shows when the chain is recomputed. The
chain's head (its last number and hash) is kept in a row of its own, which every append reads
and writes in the transaction of the change it records: concurrent appends of one organization
queue on that row (PostgreSQL) or on the write lock (SQLite) rather than fork the chain, and an
event removed from the end is still found.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from callplane.models.base import Base


class AuditEvent(Base):
    __tablename__ = "audit_events"
    __table_args__ = (
        Index("ix_audit_events_organization_id_at", "organization_id", "at"),
        Index("ix_audit_events_organization_id_actor_seq", "organization_id", "actor", "seq"),
        Index("ix_audit_events_organization_id_action_seq", "organization_id", "action", "seq"),
        Index(
            "ix_audit_events_organization_id_resource_id_seq",
            "organization_id",
            "resource_id",
            "seq",
        ),
    )

    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    at: Mapped[datetime]
    actor: Mapped[str] = mapped_column(String(300))
    action: Mapped[str] = mapped_column(String(100))
    resource_type: Mapped[str] = mapped_column(String(50))
    resource_id: Mapped[str | None] = mapped_column(String(300))
    ip: Mapped[str | None] = mapped_column(String(64))
    request_id: Mapped[str | None] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))


class AuditHead(Base):
    __tablename__ = "audit_heads"

    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer)
    hash: Mapped[str] = mapped_column(String(64))
