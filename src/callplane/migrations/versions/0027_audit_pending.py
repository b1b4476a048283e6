"""audit_pending: events wait there to be sealed; every row of audit_events is sealed

A change used to write its event into audit_events (with seq and hash empty on PostgreSQL, or
numbered and hashed at once on SQLite), and so into its six indexes. It now writes one row of
audit_pending, which has no index but its key; sealing moves it into audit_events. Events not
sealed yet move to audit_pending, and audit_events' seq and hash are never empty again.

Revision ID: 0027
Revises: 0026
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FIELDS = "organization_id, at, actor, action, resource_type, resource_id, ip, request_id"
_UNSEALED = sa.text("seq IS NULL")


def upgrade() -> None:
    op.create_table(
        "audit_pending",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=300), nullable=False),
        sa.Column("action", sa.String(length=100), nullable=False),
        sa.Column("resource_type", sa.String(length=50), nullable=False),
        sa.Column("resource_id", sa.String(length=300), nullable=True),
        sa.Column("ip", sa.String(length=64), nullable=True),
        sa.Column("request_id", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_audit_pending_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_pending")),
    )
    op.execute(
        f"INSERT INTO audit_pending ({_FIELDS}) "  # noqa: S608 - constant column names
        f"SELECT {_FIELDS} FROM audit_events WHERE seq IS NULL ORDER BY id"
    )
    op.execute("DELETE FROM audit_events WHERE seq IS NULL")
    op.drop_index("ix_audit_events_unsealed", table_name="audit_events")
    with op.batch_alter_table("audit_events") as batch:
        batch.alter_column("seq", existing_type=sa.Integer(), nullable=False)
        batch.alter_column("hash", existing_type=sa.String(length=64), nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("audit_events") as batch:
        batch.alter_column("seq", existing_type=sa.Integer(), nullable=True)
        batch.alter_column("hash", existing_type=sa.String(length=64), nullable=True)
    op.create_index(
        "ix_audit_events_unsealed",
        "audit_events",
        ["organization_id", "id"],
        sqlite_where=_UNSEALED,
        postgresql_where=_UNSEALED,
    )
    op.execute(
        f"INSERT INTO audit_events ({_FIELDS}) "  # noqa: S608 - constant column names
        f"SELECT {_FIELDS} FROM audit_pending ORDER BY id"
    )
    op.drop_table("audit_pending")
