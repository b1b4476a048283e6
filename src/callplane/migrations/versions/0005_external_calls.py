"""external calls and recordings

Revision ID: 0005
Revises: 0004
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from callplane.models.base import JSONType

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "external_calls",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("external_call_id", sa.String(length=255), nullable=True),
        sa.Column("title", sa.String(length=500), nullable=True),
        sa.Column("direction", sa.String(length=16), nullable=False),
        sa.Column("from_number", sa.String(length=64), nullable=True),
        sa.Column("to_number", sa.String(length=64), nullable=True),
        sa.Column("duration_seconds", sa.Integer(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("source_id", sa.Uuid(), nullable=True),
        sa.Column("source_name", sa.String(length=255), nullable=True),
        sa.Column("source_provider", sa.String(length=255), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "direction IN ('inbound', 'outbound')", name=op.f("ck_external_calls_direction")
        ),
        sa.CheckConstraint(
            "status IN ('processing', 'transcribed', 'error')",
            name=op.f("ck_external_calls_status"),
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_external_calls_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_external_calls")),
    )
    with op.batch_alter_table("external_calls", schema=None) as batch_op:
        batch_op.create_index(
            "ix_external_calls_organization_id_created_at_id",
            ["organization_id", "created_at", "id"],
            unique=False,
        )

    op.create_table(
        "recordings",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("external_call_id", sa.Uuid(), nullable=True),
        sa.Column("call_id", sa.Uuid(), nullable=True),
        sa.Column("file_name", sa.String(length=255), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("transcript", JSONType, nullable=True),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("storage_key", sa.String(length=255), nullable=True),
        sa.Column("content_type", sa.String(length=127), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=True),
        sa.Column("awaiting_redaction", sa.Boolean(), nullable=False),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.Column("excluded", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "(external_call_id IS NULL) <> (call_id IS NULL)", name=op.f("ck_recordings_owner")
        ),
        sa.ForeignKeyConstraint(
            ["organization_id", "call_id"],
            ["calls.organization_id", "calls.id"],
            name=op.f("fk_recordings_organization_id_call_id_calls"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id", "external_call_id"],
            ["external_calls.organization_id", "external_calls.id"],
            name=op.f("fk_recordings_organization_id_external_call_id_external_calls"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_recordings_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_recordings")),
    )
    with op.batch_alter_table("recordings", schema=None) as batch_op:
        # The signed audio URL has no organization in it: lookup by recording id alone.
        batch_op.create_index("ix_recordings_id", ["id"], unique=False)
        batch_op.create_index(
            "ix_recordings_organization_id_call_id", ["organization_id", "call_id"], unique=False
        )
        batch_op.create_index(
            "ix_recordings_organization_id_external_call_id_started_at_id",
            ["organization_id", "external_call_id", "started_at", "id"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("recordings", schema=None) as batch_op:
        batch_op.drop_index("ix_recordings_organization_id_external_call_id_started_at_id")
        batch_op.drop_index("ix_recordings_organization_id_call_id")
        batch_op.drop_index("ix_recordings_id")
    op.drop_table("recordings")
    with op.batch_alter_table("external_calls", schema=None) as batch_op:
        batch_op.drop_index("ix_external_calls_organization_id_created_at_id")
    op.drop_table("external_calls")
