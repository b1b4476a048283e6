"""Calls, the tags on them, the find-by-attribute index, idempotency keys, transcript feedback.

Every table is keyed by ``(organization_id, ...)`` so rows of one organization sit together and a
distributed PostgreSQL can shard by organization. Child rows point at their call with a composite
foreign key ``(organization_id, call_uuid)`` and go away with it.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal, get_args

from sqlalchemy import (
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from callplane.models.base import Base, utcnow

#: A call's status, the one place it is spelled (docs/api-contract.md#call-statuses-and-cancel).
#: Only ``enqueued`` can be cancelled; the moves between them are ``engine.lifecycle``'s.
CallStatus = Literal[
    "enqueued", "dialing", "in_progress", "completed", "failed", "no_answer", "busy", "cancelled"
]
CALL_STATUSES: tuple[CallStatus, ...] = get_args(CallStatus)
#: A worker holds the call, and its lease must be kept.
ACTIVE_STATUSES: tuple[CallStatus, ...] = ("dialing", "in_progress")
#: Not over yet: the call may still speak with its voice.
UNFINISHED_STATUSES: tuple[CallStatus, ...] = ("enqueued", *ACTIVE_STATUSES)
#: Over: nothing moves the call again.
TERMINAL_STATUSES: tuple[CallStatus, ...] = tuple(
    s for s in CALL_STATUSES if s not in UNFINISHED_STATUSES
)


class Call(Base):
    __tablename__ = "calls"
    __table_args__ = (
        # GET /calls: newest first, optionally narrowed by status.
        Index("ix_calls_organization_id_created_at_id", "organization_id", "created_at", "id"),
        Index(
            "ix_calls_organization_id_status_created_at_id",
            "organization_id",
            "status",
            "created_at",
            "id",
        ),
        # The engine's queue (docs/engine-core.md) spans organizations: the oldest enqueued calls,
        # and the calls in dialing/in_progress whose lease ran out. The one calls index not led by
        # organization_id, because the dispatcher serves every organization.
        Index("ix_calls_status_created_at_id", "status", "created_at", "id"),
        # The dashboard's calls filtered by the other party's number (either side of the call).
        Index(
            "ix_calls_organization_id_to_number_created_at",
            "organization_id",
            "to_number",
            "created_at",
        ),
        Index(
            "ix_calls_organization_id_from_number_created_at",
            "organization_id",
            "from_number",
            "created_at",
        ),
        # An agent's latest calls (replays of its last N calls).
        Index(
            "ix_calls_organization_id_agent_uuid_created_at",
            "organization_id",
            "agent_uuid",
            "created_at",
        ),
        # GET /calls/screen_pop/{token}. Partial: only transferred calls carry a token, so the
        # other calls' inserts (and `callplane load`) pay nothing for it.
        Index(
            "ix_calls_organization_id_screen_pop_token",
            "organization_id",
            "screen_pop_token",
            sqlite_where=text("screen_pop_token IS NOT NULL"),
            postgresql_where=text("screen_pop_token IS NOT NULL"),
        ),
        # Retention: an agent commit's ended calls whose text is still kept, oldest first.
        Index(
            "ix_calls_organization_id_agent_commit_id_ended_at",
            "organization_id",
            "agent_commit_id",
            "ended_at",
            sqlite_where=text("transcript_deleted_at IS NULL"),
            postgresql_where=text("transcript_deleted_at IS NULL"),
        ),
        # A campaign's attempts. Partial: other calls carry no campaign.
        Index(
            "ix_calls_organization_id_campaign_id",
            "organization_id",
            "campaign_id",
            sqlite_where=text("campaign_id IS NOT NULL"),
            postgresql_where=text("campaign_id IS NOT NULL"),
        ),
    )

    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    simple_uuid: Mapped[uuid.UUID] = mapped_column(default=uuid.uuid4)
    from_number: Mapped[str | None] = mapped_column(String(64), default=None)
    to_number: Mapped[str | None] = mapped_column(String(64), default=None)
    status: Mapped[str] = mapped_column(String(16), default="enqueued")
    started_at: Mapped[datetime | None] = mapped_column(default=None)
    ended_at: Mapped[datetime | None] = mapped_column(default=None)
    duration: Mapped[int | None] = mapped_column(default=None)
    transcripts: Mapped[list[Any]] = mapped_column(default=list)
    screen_pop_token: Mapped[str | None] = mapped_column(String(255), default=None)
    call_prompt: Mapped[str | None] = mapped_column(Text, default=None)
    answered_by: Mapped[str | None] = mapped_column(String(32), default=None)
    language: Mapped[str | None] = mapped_column(String(32), default=None)
    transferred: Mapped[bool] = mapped_column(default=False)
    handoff_metadata: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    direction: Mapped[str | None] = mapped_column(String(16), default=None)
    voice_uuid: Mapped[uuid.UUID | None] = mapped_column(default=None)
    agent_speaks_first: Mapped[bool | None] = mapped_column(default=None)
    # The agent's uuid (the wire's agent_id), kept as a value rather than a join: an agent's
    # uuid never changes, and reading a call then needs no other table.
    agent_uuid: Mapped[uuid.UUID | None] = mapped_column(default=None)
    agent_branch: Mapped[str | None] = mapped_column(String(64), default=None)
    agent_commit_id: Mapped[str | None] = mapped_column(String(64), default=None)
    agent_branch_name: Mapped[str | None] = mapped_column(String(255), default=None)
    #: The campaign this call is an attempt of (``docs/campaigns.md``); null on other calls.
    campaign_id: Mapped[uuid.UUID | None] = mapped_column(default=None)
    external_identifiers: Mapped[dict[str, Any]] = mapped_column(default=dict)
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    cart: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    analyzers: Mapped[list[Any]] = mapped_column(default=list)
    analysis_results: Mapped[list[Any]] = mapped_column(default=list)
    summary: Mapped[str | None] = mapped_column(Text, default=None)
    #: When retention deleted the transcript text and the recording (``engine/call_retention``).
    transcript_deleted_at: Mapped[datetime | None] = mapped_column(default=None)
    #: What the agent's redaction replaced, by entity (``{"credit_card": 1}``), never the
    #: values; None when the call's agent redacts nothing.
    redactions: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    keyterms: Mapped[list[str]] = mapped_column(default=list)
    #: What the agent says first when the call is answered (extension of POST /calls).
    first_message: Mapped[str | None] = mapped_column(Text, default=None)
    #: The simulated network's person for this call (``{"script": [{"say", "after_ms"}]}``).
    simulate: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    # The engine's hold on the call (docs/engine-core.md): which worker process dials it and until
    # when that worker is presumed alive. Set together with the move to ``dialing``.
    worker_id: Mapped[str | None] = mapped_column(String(64), default=None)
    lease_expires_at: Mapped[datetime | None] = mapped_column(default=None)
    #: The ``sequence`` of the call's newest event; each transition increments it in its UPDATE.
    event_sequence: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class CallEvent(Base):
    """One move of a call through its lifecycle (GET /calls/{uuid}/events)."""

    __tablename__ = "call_events"
    __table_args__ = (
        ForeignKeyConstraint(
            ["organization_id", "call_uuid"],
            ["calls.organization_id", "calls.id"],
            ondelete="CASCADE",
        ),
        # The retention purge takes the oldest events of every organization (engine/retention).
        Index("ix_call_events_at", "at"),
        # The overview (issue 29): an organization's events of one type by time.
        Index("ix_call_events_organization_id_type_at", "organization_id", "type", "at"),
    )

    organization_id: Mapped[int] = mapped_column(primary_key=True)
    call_uuid: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    sequence: Mapped[int] = mapped_column(primary_key=True)
    type: Mapped[str] = mapped_column(String(32))
    at: Mapped[datetime] = mapped_column(default=utcnow)
    data: Mapped[dict[str, Any]] = mapped_column(default=dict)


class CallTagLink(Base):
    """A call tag on a call; ``position`` keeps the order the tags were given in."""

    __tablename__ = "call_tag_links"
    __table_args__ = (
        ForeignKeyConstraint(
            ["organization_id", "call_uuid"],
            ["calls.organization_id", "calls.id"],
            ondelete="CASCADE",
        ),
        ForeignKeyConstraint(
            ["organization_id", "tag_uuid"],
            ["call_tags.organization_id", "call_tags.id"],
            ondelete="CASCADE",
        ),
        # Deleting a tag finds its links through this index.
        Index("ix_call_tag_links_organization_id_tag_uuid", "organization_id", "tag_uuid"),
    )

    organization_id: Mapped[int] = mapped_column(primary_key=True)
    call_uuid: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    tag_uuid: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    position: Mapped[int] = mapped_column(default=0)


class CallAttribute(Base):
    """One searchable (source, key, value) of a call: the index behind find_by_attribute.

    Keys and values are stored as SHA-256 digests: every index entry has the same small size
    whatever the client sent (a PostgreSQL btree entry is limited to about 2.7 kB), and the
    lookup is an equality on fixed-width bytes. The value digest is taken over the value's JSON
    text for numbers and booleans (``123``, ``1.5``, ``true``) and over the string itself for
    strings (docs/api-contract.md#find-by-attribute); objects, arrays and null get no row, so they
    never match. ``created_at`` is the call's, copied so the most recent match is the first index
    entry.
    """

    __tablename__ = "call_attributes"
    __table_args__ = (
        ForeignKeyConstraint(
            ["organization_id", "call_uuid"],
            ["calls.organization_id", "calls.id"],
            ondelete="CASCADE",
        ),
        # Scanned backwards: (created_at DESC, call_uuid DESC) is the "most recent" order.
        Index(
            "ix_call_attributes_lookup",
            "organization_id",
            "source",
            "key_digest",
            "value_digest",
            "created_at",
            "call_uuid",
        ),
    )

    organization_id: Mapped[int] = mapped_column(primary_key=True)
    call_uuid: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    source: Mapped[str] = mapped_column(String(8), primary_key=True)  # 'param' | 'external'
    key_digest: Mapped[bytes] = mapped_column(LargeBinary(32), primary_key=True)
    value_digest: Mapped[bytes] = mapped_column(LargeBinary(32))
    created_at: Mapped[datetime] = mapped_column()


class CallIdempotencyKey(Base):
    """The first response to a ``POST /calls`` with an ``Idempotency-Key``, kept 24 hours."""

    __tablename__ = "call_idempotency_keys"

    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    request_digest: Mapped[str] = mapped_column(String(64))
    response_status: Mapped[int | None] = mapped_column(Integer, default=None)
    response_body: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class FeedbackEntry(Base):
    """A comment on a call's transcript (or one line of it), which can be resolved."""

    __tablename__ = "feedback_entries"
    __table_args__ = (
        ForeignKeyConstraint(
            ["organization_id", "call_uuid"],
            ["calls.organization_id", "calls.id"],
            ondelete="CASCADE",
        ),
        Index(
            "ix_feedback_entries_organization_id_call_uuid_created_at",
            "organization_id",
            "call_uuid",
            "created_at",
        ),
    )

    organization_id: Mapped[int] = mapped_column(primary_key=True)
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    call_uuid: Mapped[uuid.UUID] = mapped_column()
    transcript_index: Mapped[int | None] = mapped_column(default=None)
    comment: Mapped[str | None] = mapped_column(Text, default=None)
    resolved: Mapped[bool] = mapped_column(default=False)
    resolved_at: Mapped[datetime | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class FeedbackNote(Base):
    """A note on a feedback entry; the integer id gives the order of creation."""

    __tablename__ = "feedback_notes"
    __table_args__ = (
        ForeignKeyConstraint(
            ["organization_id", "feedback_uuid"],
            ["feedback_entries.organization_id", "feedback_entries.id"],
            ondelete="CASCADE",
        ),
        Index(
            "ix_feedback_notes_organization_id_feedback_uuid_id",
            "organization_id",
            "feedback_uuid",
            "id",
        ),
    )

    organization_id: Mapped[int] = mapped_column()
    id: Mapped[int] = mapped_column(primary_key=True)
    feedback_uuid: Mapped[uuid.UUID] = mapped_column()
    author_name: Mapped[str] = mapped_column(String(255))
    note_text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
