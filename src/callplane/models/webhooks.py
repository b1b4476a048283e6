"""Webhook endpoints, the events outbox, the delivery queue and the delivery log
(docs/api-contract.md#webhooks).

An event is written once (``webhook_events``, its exact body, so every attempt signs the same
bytes) in the transaction that made the change it reports, with one ``webhook_jobs`` row per
subscribed endpoint: the outbox. Workers take due jobs and record every attempt in
``webhook_deliveries`` (the delivery log). Deleting an endpoint removes its jobs and its log.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, ForeignKeyConstraint, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from callplane.models.base import Base, utcnow


class WebhookEndpoint(Base):
    __tablename__ = "webhook_endpoints"

    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    url: Mapped[str] = mapped_column(Text)
    #: Event types sent to it; null means every type, also ones added later.
    events: Mapped[list[str] | None] = mapped_column(default=None)
    description: Mapped[str | None] = mapped_column(Text, default=None)
    enabled: Mapped[bool] = mapped_column(default=True)
    #: ``whsec_<base64>`` sealed with the deployment's key (``webhooks.secrets``): the receiver
    #: verifies signatures with it, so it cannot be hashed.
    secret: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class WebhookEvent(Base):
    __tablename__ = "webhook_events"

    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    type: Mapped[str] = mapped_column(String(64))
    #: The JSON body exactly as sent and signed.
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class WebhookJob(Base):
    """An event still to be sent to one endpoint: the next attempt and when it is due."""

    __tablename__ = "webhook_jobs"
    __table_args__ = (
        ForeignKeyConstraint(
            ["organization_id", "endpoint_id"],
            ["webhook_endpoints.organization_id", "webhook_endpoints.id"],
            ondelete="CASCADE",
        ),
        ForeignKeyConstraint(
            ["organization_id", "event_id"],
            ["webhook_events.organization_id", "webhook_events.id"],
            ondelete="CASCADE",
        ),
        # Workers serve every organization: the due jobs, oldest first.
        Index("ix_webhook_jobs_due_at", "due_at"),
        # The earlier events of the same call still waiting for the same endpoint.
        Index(
            "ix_webhook_jobs_ordering",
            "organization_id",
            "endpoint_id",
            "ordering_key",
            "position",
        ),
    )

    organization_id: Mapped[int] = mapped_column(primary_key=True)
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    endpoint_id: Mapped[uuid.UUID] = mapped_column()
    event_id: Mapped[uuid.UUID] = mapped_column()
    #: Number of the next attempt (1 for the first).
    attempt: Mapped[int] = mapped_column(default=1)
    #: When the first attempt was made; the retry schedule counts from it.
    first_attempt_at: Mapped[datetime | None] = mapped_column(default=None)
    due_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: A worker sending it holds it until then (a worker that died lets it go).
    locked_until: Mapped[datetime | None] = mapped_column(default=None)
    #: False for a redelivery asked for by hand: one attempt, no schedule.
    retries: Mapped[bool] = mapped_column(default=True)
    # Events of one call (ordering_key = the call's id, position = its event sequence) go to an
    # endpoint in order: a job waits while an earlier one of its key has not been tried yet.
    ordering_key: Mapped[str | None] = mapped_column(String(64), default=None)
    position: Mapped[int] = mapped_column(default=0)


class WebhookDelivery(Base):
    """One attempt to deliver an event to an endpoint (the delivery log)."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        ForeignKeyConstraint(
            ["organization_id", "endpoint_id"],
            ["webhook_endpoints.organization_id", "webhook_endpoints.id"],
            ondelete="CASCADE",
        ),
        ForeignKeyConstraint(
            ["organization_id", "event_id"],
            ["webhook_events.organization_id", "webhook_events.id"],
            ondelete="CASCADE",
        ),
        # GET /webhooks/{id}/deliveries: newest first.
        Index(
            "ix_webhook_deliveries_endpoint_created_at",
            "organization_id",
            "endpoint_id",
            "created_at",
            "id",
        ),
        # The retention purge takes the oldest attempts of every organization.
        Index("ix_webhook_deliveries_created_at", "created_at"),
        # The overview (issue 29): an organization's attempts by time, for the failure rate.
        Index("ix_webhook_deliveries_organization_id_created_at", "organization_id", "created_at"),
    )

    organization_id: Mapped[int] = mapped_column(primary_key=True)
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    endpoint_id: Mapped[uuid.UUID] = mapped_column()
    event_id: Mapped[uuid.UUID] = mapped_column()
    event_type: Mapped[str] = mapped_column(String(64))
    attempt: Mapped[int] = mapped_column()
    status_code: Mapped[int | None] = mapped_column(default=None)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    duration_ms: Mapped[int | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    next_attempt_at: Mapped[datetime | None] = mapped_column(default=None)
    delivered: Mapped[bool] = mapped_column(default=False)


__all__ = ["WebhookDelivery", "WebhookEndpoint", "WebhookEvent", "WebhookJob"]
