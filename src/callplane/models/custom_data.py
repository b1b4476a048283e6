"""The catalog of custom data tables (docs/api-contract.md).

Each row describes one user table; its records live in a real table named ``udt_<id>`` that is
created and dropped at run time (never by migrations). ``id`` never repeats (AUTOINCREMENT on
SQLite, a sequence on PostgreSQL), so a physical table name or a per-process schema cache entry
can never be confused with a later table that reused an id.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from callplane.models.base import Base, utcnow


class CustomTable(Base):
    __tablename__ = "custom_tables"
    # The lookup every /data/{table_name} request makes; also enforces one name per organization.
    __table_args__ = (
        Index("ix_custom_tables_organization_id_name", "organization_id", "name", unique=True),
        {"sqlite_autoincrement": True},
    )

    organization_id: Mapped[int] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(63))
    #: [{"name", "type", "required", "unique", "indexed", "references", "references_id"}]
    columns: Mapped[list[Any]] = mapped_column()
    #: [[column, ...], ...]: composite indexes declared at creation
    indexes: Mapped[list[Any]] = mapped_column(default=list)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
