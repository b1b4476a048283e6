"""privacy: key scopes and expiry, dashboard roles, the audit log's hash chains

Keys made before scopes hold ``*`` (everything they could do before); people who could sign in
before are owners.

Revision ID: 0021
Revises: 0020
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _organization_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["organization_id"],
        ["organizations.id"],
        name=op.f(f"fk_{table}_organization_id_organizations"),
        ondelete="CASCADE",
    )


def upgrade() -> None:
    op.add_column(
        "api_keys", sa.Column("scopes", sa.String(length=1000), nullable=False, server_default="*")
    )
    op.add_column("api_keys", sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column(
        "users", sa.Column("role", sa.String(length=16), nullable=False, server_default="owner")
    )
    op.create_table(
        "audit_events",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=300), nullable=False),
        sa.Column("action", sa.String(length=100), nullable=False),
        sa.Column("resource_type", sa.String(length=50), nullable=False),
        sa.Column("resource_id", sa.String(length=300), nullable=True),
        sa.Column("ip", sa.String(length=64), nullable=True),
        sa.Column("request_id", sa.String(length=64), nullable=True),
        sa.Column("hash", sa.String(length=64), nullable=False),
        _organization_fk("audit_events"),
        sa.PrimaryKeyConstraint("organization_id", "seq", name=op.f("pk_audit_events")),
    )
    op.create_index("ix_audit_events_organization_id_at", "audit_events", ["organization_id", "at"])
    for column in ("actor", "action", "resource_id"):
        op.create_index(
            f"ix_audit_events_organization_id_{column}_seq",
            "audit_events",
            ["organization_id", column, "seq"],
        )
    op.create_table(
        "audit_heads",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        _organization_fk("audit_heads"),
        sa.PrimaryKeyConstraint("organization_id", name=op.f("pk_audit_heads")),
    )


def downgrade() -> None:
    op.drop_table("audit_heads")
    for column in ("resource_id", "action", "actor"):
        op.drop_index(f"ix_audit_events_organization_id_{column}_seq", table_name="audit_events")
    op.drop_index("ix_audit_events_organization_id_at", table_name="audit_events")
    op.drop_table("audit_events")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("role")
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("expires_at")
        batch.drop_column("scopes")
