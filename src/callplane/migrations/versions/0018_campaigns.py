"""campaigns: campaigns, their recipients, the do-not-call list, and calls.campaign_id

Revision ID: 0018
Revises: 0017
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from callplane.models.base import JSONType

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "campaigns",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("agent_uuid", sa.Uuid(), nullable=True),
        sa.Column("agent_branch_name", sa.String(length=63), nullable=True),
        sa.Column("agent_commit_id", sa.Uuid(), nullable=True),
        sa.Column("from_number", sa.String(length=64), nullable=True),
        sa.Column("params", JSONType, nullable=False),
        sa.Column("schedule", JSONType, nullable=False),
        sa.Column("retry", JSONType, nullable=False),
        sa.Column("pacing", JSONType, nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("pace_at", _TS, nullable=True),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.Column("started_at", _TS, nullable=True),
        sa.Column("finished_at", _TS, nullable=True),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_campaigns_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_campaigns")),
    )
    op.create_index(
        "ix_campaigns_organization_id_created_at_id",
        "campaigns",
        ["organization_id", "created_at", "id"],
    )
    op.create_index(
        "ix_campaigns_running",
        "campaigns",
        ["status"],
        sqlite_where=sa.text("status = 'running'"),
        postgresql_where=sa.text("status = 'running'"),
    )
    op.create_table(
        "campaign_recipients",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("campaign_id", sa.Uuid(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("phone_number", sa.String(length=64), nullable=False),
        sa.Column("params", JSONType, nullable=False),
        sa.Column("timezone", sa.String(length=64), nullable=True),
        sa.Column("external_id", sa.String(length=255), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_outcome", sa.String(length=16), nullable=True),
        sa.Column("next_attempt_at", _TS, nullable=False),
        sa.Column("call_ids", JSONType, nullable=False),
        sa.Column("current_call_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id", "campaign_id"],
            ["campaigns.organization_id", "campaigns.id"],
            name=op.f("fk_campaign_recipients_organization_id_campaigns"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_campaign_recipients")),
    )
    op.create_index(
        "ix_campaign_recipients_organization_id_campaign_id_phone_number",
        "campaign_recipients",
        ["organization_id", "campaign_id", "phone_number"],
        unique=True,
    )
    op.create_index(
        "ix_campaign_recipients_due",
        "campaign_recipients",
        ["organization_id", "campaign_id", "status", "next_attempt_at"],
    )
    op.create_index(
        "ix_campaign_recipients_organization_id_campaign_id_position",
        "campaign_recipients",
        ["organization_id", "campaign_id", "position"],
    )
    op.create_index(
        "ix_campaign_recipients_calling",
        "campaign_recipients",
        ["organization_id", "current_call_id"],
        sqlite_where=sa.text("status = 'calling'"),
        postgresql_where=sa.text("status = 'calling'"),
    )
    op.create_table(
        "suppressions",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("phone_number", sa.String(length=64), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", _TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_suppressions_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "phone_number", name=op.f("pk_suppressions")),
    )
    op.create_index(
        "ix_suppressions_organization_id_created_at",
        "suppressions",
        ["organization_id", "created_at"],
    )
    with op.batch_alter_table("calls") as batch:
        batch.add_column(sa.Column("campaign_id", sa.Uuid(), nullable=True))
    op.create_index(
        "ix_calls_organization_id_campaign_id",
        "calls",
        ["organization_id", "campaign_id"],
        sqlite_where=sa.text("campaign_id IS NOT NULL"),
        postgresql_where=sa.text("campaign_id IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_calls_organization_id_campaign_id", table_name="calls")
    with op.batch_alter_table("calls") as batch:
        batch.drop_column("campaign_id")
    op.drop_index("ix_suppressions_organization_id_created_at", table_name="suppressions")
    op.drop_table("suppressions")
    for name in (
        "ix_campaign_recipients_calling",
        "ix_campaign_recipients_organization_id_campaign_id_position",
        "ix_campaign_recipients_due",
        "ix_campaign_recipients_organization_id_campaign_id_phone_number",
    ):
        op.drop_index(name, table_name="campaign_recipients")
    op.drop_table("campaign_recipients")
    op.drop_index("ix_campaigns_running", table_name="campaigns")
    op.drop_index("ix_campaigns_organization_id_created_at_id", table_name="campaigns")
    op.drop_table("campaigns")
