"""Campaigns: outbound calling programs, their recipients, and the do-not-call list
(``docs/campaigns.md``).

A recipient is one row per phone number of a campaign. The dialer chooses the due ones through
``ix_campaign_recipients_due`` (organization, campaign, status, next attempt): an index range,
never a scan, whatever the campaign's size. The recipients whose attempt is in flight are found
through a partial index over ``calling`` rows only, which stays as small as the calls in flight.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, ForeignKeyConstraint, Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from callplane.models.base import Base, utcnow

CAMPAIGN_STATUSES = ("draft", "running", "paused", "completed", "cancelled")
RECIPIENT_STATUSES = (
    "queued",
    "calling",
    "completed",
    "voicemail",
    "exhausted",
    "suppressed",
    "opted_out",
    "expired",
    "cancelled",
)
#: A recipient in one of these is done: nothing more happens to it.
DONE = tuple(s for s in RECIPIENT_STATUSES if s not in ("queued", "calling"))


class Campaign(Base):
    __tablename__ = "campaigns"
    __table_args__ = (
        Index("ix_campaigns_organization_id_created_at_id", "organization_id", "created_at", "id"),
        # The dialer serves running campaigns of every organization (like the calls' queue).
        Index(
            "ix_campaigns_running",
            "status",
            sqlite_where=text("status = 'running'"),
            postgresql_where=text("status = 'running'"),
        ),
    )

    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(255))
    agent_uuid: Mapped[uuid.UUID | None] = mapped_column(default=None)
    agent_branch_name: Mapped[str | None] = mapped_column(String(63), default=None)
    agent_commit_id: Mapped[uuid.UUID | None] = mapped_column(default=None)
    from_number: Mapped[str | None] = mapped_column(String(64), default=None)
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    schedule: Mapped[dict[str, Any]] = mapped_column(default=dict)
    retry: Mapped[dict[str, Any]] = mapped_column(default=dict)
    pacing: Mapped[dict[str, Any]] = mapped_column(default=dict)
    status: Mapped[str] = mapped_column(String(16), default="draft")
    #: The pace shared by every worker: no attempt is dialled before this moment, and each one
    #: dialled moves it on by 60 / calls_per_minute seconds (in the same transaction).
    pace_at: Mapped[datetime | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(default=None)
    finished_at: Mapped[datetime | None] = mapped_column(default=None)


class CampaignRecipient(Base):
    __tablename__ = "campaign_recipients"
    __table_args__ = (
        ForeignKeyConstraint(
            ["organization_id", "campaign_id"],
            ["campaigns.organization_id", "campaigns.id"],
            ondelete="CASCADE",
        ),
        # A number once per campaign; also the lookup of a number's recipient.
        Index(
            "ix_campaign_recipients_organization_id_campaign_id_phone_number",
            "organization_id",
            "campaign_id",
            "phone_number",
            unique=True,
        ),
        # The due recipients (status 'queued', next_attempt_at <= now, soonest first), the
        # counts by status, and the list by status.
        Index(
            "ix_campaign_recipients_due",
            "organization_id",
            "campaign_id",
            "status",
            "next_attempt_at",
        ),
        # The list in the order the recipients were added.
        Index(
            "ix_campaign_recipients_organization_id_campaign_id_position",
            "organization_id",
            "campaign_id",
            "position",
        ),
        # Attempts in flight, whose call's end the dialer waits for.
        Index(
            "ix_campaign_recipients_calling",
            "organization_id",
            "current_call_id",
            sqlite_where=text("status = 'calling'"),
            postgresql_where=text("status = 'calling'"),
        ),
    )

    organization_id: Mapped[int] = mapped_column(primary_key=True)
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    campaign_id: Mapped[uuid.UUID] = mapped_column()
    #: The order of addition (the CSV's row order), for the list and the export.
    position: Mapped[int] = mapped_column()
    phone_number: Mapped[str] = mapped_column(String(64))
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    timezone: Mapped[str | None] = mapped_column(String(64), default=None)
    external_id: Mapped[str | None] = mapped_column(String(255), default=None)
    status: Mapped[str] = mapped_column(String(16), default="queued")
    attempts: Mapped[int] = mapped_column(default=0)
    last_outcome: Mapped[str | None] = mapped_column(String(16), default=None)
    next_attempt_at: Mapped[datetime] = mapped_column()
    call_ids: Mapped[list[str]] = mapped_column(default=list)
    current_call_id: Mapped[uuid.UUID | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class Suppression(Base):
    """A number of the organization's do-not-call list."""

    __tablename__ = "suppressions"
    __table_args__ = (
        Index("ix_suppressions_organization_id_created_at", "organization_id", "created_at"),
    )

    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    phone_number: Mapped[str] = mapped_column(String(64), primary_key=True)
    reason: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
