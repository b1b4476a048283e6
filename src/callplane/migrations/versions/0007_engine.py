"""call engine: leases and events of calls, webhooks

Revision ID: 0007
Revises: 0006
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from callplane.models.base import JSONType

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("calls", schema=None) as batch_op:
        batch_op.add_column(sa.Column("first_message", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("worker_id", sa.String(length=64), nullable=True))
        batch_op.add_column(
            sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True)
        )
        batch_op.add_column(
            sa.Column("event_sequence", sa.Integer(), nullable=False, server_default="0")
        )
        batch_op.create_index(
            "ix_calls_status_created_at_id", ["status", "created_at", "id"], unique=False
        )
    with op.batch_alter_table("calls", schema=None) as batch_op:
        batch_op.alter_column("event_sequence", server_default=None)

    op.create_table(
        "call_events",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("call_uuid", sa.Uuid(), nullable=False),
        sa.Column("sequence", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("data", JSONType, nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id", "call_uuid"],
            ["calls.organization_id", "calls.id"],
            name=op.f("fk_call_events_organization_id_call_uuid_calls"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "organization_id", "call_uuid", "sequence", name=op.f("pk_call_events")
        ),
    )

    op.create_table(
        "webhook_endpoints",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("events", JSONType, nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("secret", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_webhook_endpoints_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_webhook_endpoints")),
    )
    op.create_table(
        "webhook_events",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("type", sa.String(length=64), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_webhook_events_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_webhook_events")),
    )
    op.create_table(
        "webhook_jobs",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("endpoint_id", sa.Uuid(), nullable=False),
        sa.Column("event_id", sa.Uuid(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("first_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("retries", sa.Boolean(), nullable=False),
        sa.Column("ordering_key", sa.String(length=64), nullable=True),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id", "endpoint_id"],
            ["webhook_endpoints.organization_id", "webhook_endpoints.id"],
            name=op.f("fk_webhook_jobs_organization_id_endpoint_id_webhook_endpoints"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id", "event_id"],
            ["webhook_events.organization_id", "webhook_events.id"],
            name=op.f("fk_webhook_jobs_organization_id_event_id_webhook_events"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_webhook_jobs")),
    )
    with op.batch_alter_table("webhook_jobs", schema=None) as batch_op:
        batch_op.create_index("ix_webhook_jobs_due_at", ["due_at"], unique=False)
        batch_op.create_index(
            "ix_webhook_jobs_ordering",
            ["organization_id", "endpoint_id", "ordering_key", "position"],
            unique=False,
        )
    op.create_table(
        "webhook_deliveries",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("endpoint_id", sa.Uuid(), nullable=False),
        sa.Column("event_id", sa.Uuid(), nullable=False),
        sa.Column("event_type", sa.String(length=64), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("delivered", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id", "endpoint_id"],
            ["webhook_endpoints.organization_id", "webhook_endpoints.id"],
            name=op.f("fk_webhook_deliveries_organization_id_endpoint_id_webhook_endpoints"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id", "event_id"],
            ["webhook_events.organization_id", "webhook_events.id"],
            name=op.f("fk_webhook_deliveries_organization_id_event_id_webhook_events"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_webhook_deliveries")),
    )
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.create_index(
            "ix_webhook_deliveries_endpoint_created_at",
            ["organization_id", "endpoint_id", "created_at", "id"],
            unique=False,
        )


def downgrade() -> None:
    op.drop_table("webhook_deliveries")
    op.drop_table("webhook_jobs")
    op.drop_table("webhook_events")
    op.drop_table("webhook_endpoints")
    op.drop_table("call_events")
    with op.batch_alter_table("calls", schema=None) as batch_op:
        batch_op.drop_index("ix_calls_status_created_at_id")
        batch_op.drop_column("event_sequence")
        batch_op.drop_column("lease_expires_at")
        batch_op.drop_column("worker_id")
        batch_op.drop_column("first_message")
