"""External calls (recorded sessions imported from outside the platform) and recordings.

One ``recordings`` table holds both kinds of recording: the legs of an external call
(``external_call_id`` set) and the recording of a platform call (``call_id`` set). Audio bytes
live in the configured storage under ``storage_key``; a row without a key has no audio.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    String,
    Text,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from callplane.models.base import Base, utcnow

DIRECTIONS = ("inbound", "outbound")
STATUSES = ("processing", "transcribed", "error")


class ExternalCall(Base):
    __tablename__ = "external_calls"
    __table_args__ = (
        # GET /external_calls is newest first (created_at, then id, both descending).
        Index(
            "ix_external_calls_organization_id_created_at_id", "organization_id", "created_at", "id"
        ),
        CheckConstraint("direction IN ('inbound', 'outbound')", name="direction"),
        CheckConstraint("status IN ('processing', 'transcribed', 'error')", name="status"),
    )

    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    external_call_id: Mapped[str | None] = mapped_column(String(255), default=None)
    title: Mapped[str | None] = mapped_column(String(500), default=None)
    direction: Mapped[str] = mapped_column(String(16), default="inbound")
    from_number: Mapped[str | None] = mapped_column(String(64), default=None)
    to_number: Mapped[str | None] = mapped_column(String(64), default=None)
    duration_seconds: Mapped[int | None] = mapped_column(default=None)
    started_at: Mapped[datetime | None] = mapped_column(default=None)
    status: Mapped[str] = mapped_column(String(16), default="processing")
    # The source system (SPEC: source {id, name, provider}); kept on the row, read only with it.
    source_id: Mapped[uuid.UUID | None] = mapped_column(default=None)
    source_name: Mapped[str | None] = mapped_column(String(255), default=None)
    source_provider: Mapped[str | None] = mapped_column(String(255), default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Recording(Base):
    __tablename__ = "recordings"
    __table_args__ = (
        ForeignKeyConstraint(
            ["organization_id", "external_call_id"],
            ["external_calls.organization_id", "external_calls.id"],
            ondelete="CASCADE",
        ),
        ForeignKeyConstraint(
            ["organization_id", "call_id"],
            ["calls.organization_id", "calls.id"],
            ondelete="CASCADE",
        ),
        # A recording belongs to exactly one external call or one platform call.
        CheckConstraint("(external_call_id IS NULL) <> (call_id IS NULL)", name="owner"),
        # Legs of one external call, in chronological order (started_at, then id).
        Index(
            "ix_recordings_organization_id_external_call_id_started_at_id",
            "organization_id",
            "external_call_id",
            "started_at",
            "id",
        ),
        Index("ix_recordings_organization_id_call_id", "organization_id", "call_id"),
        # The transcription queue: workers of every organization claim from it, so it is not
        # led by organization_id. Partial: only legs still to be processed are in it.
        Index(
            "ix_recordings_work_queue",
            "status",
            "lease_expires_at",
            sqlite_where=text("status IN ('pending', 'processing')"),
            postgresql_where=text("status IN ('pending', 'processing')"),
        ),
        # The signed audio URL carries no API key and so no organization: the audio route finds
        # the recording by id alone (docs/api-contract.md#recordings-and-signed-urls). The one index
        # not led by organization_id.
        Index("ix_recordings_id", "id"),
    )

    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    external_call_id: Mapped[uuid.UUID | None] = mapped_column(default=None)
    call_id: Mapped[uuid.UUID | None] = mapped_column(default=None)
    file_name: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(32), default="pending")
    started_at: Mapped[datetime | None] = mapped_column(default=None)
    transcript: Mapped[list[Any] | None] = mapped_column(default=None)
    summary: Mapped[str | None] = mapped_column(Text, default=None)
    storage_key: Mapped[str | None] = mapped_column(String(255), default=None)
    content_type: Mapped[str] = mapped_column(String(127), default="audio/wav")
    size_bytes: Mapped[int | None] = mapped_column(BigInteger, default=None)
    awaiting_redaction: Mapped[bool] = mapped_column(default=False)
    deleted: Mapped[bool] = mapped_column(default=False)
    excluded: Mapped[bool] = mapped_column(default=False)
    #: Decoded length in seconds, once processed (the call's duration_seconds follows it).
    duration_seconds: Mapped[float | None] = mapped_column(default=None)
    #: Why the leg is in ``error``.
    error: Mapped[str | None] = mapped_column(Text, default=None)
    #: Processing claims so far; a leg whose worker keeps dying stops being retried.
    attempts: Mapped[int] = mapped_column(default=0, server_default="0")
    #: The claim of the worker processing the leg: only the holder of the current token may
    #: finish it, and an expired lease makes the leg claimable again (a crash never strands it).
    lease_token: Mapped[uuid.UUID | None] = mapped_column(default=None)
    lease_expires_at: Mapped[datetime | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    @property
    def visible(self) -> bool:
        """Deleted and excluded legs are hidden everywhere (docs/api-contract.md#external-calls)."""
        return not (self.deleted or self.excluded)

    @property
    def playable(self) -> bool:
        """Visible, with audio, and not waiting for redaction: a URL may be handed out."""
        return self.visible and not self.awaiting_redaction and self.storage_key is not None
