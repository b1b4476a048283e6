"""custom data table catalog

Revision ID: 0004
Revises: 0003

The user tables themselves (``udt_<id>``) are created at run time, never here.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from callplane.models.base import JSONType

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "custom_tables",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=63), nullable=False),
        sa.Column("columns", JSONType, nullable=False),
        sa.Column("indexes", JSONType, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_custom_tables_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_custom_tables")),
        sqlite_autoincrement=True,
    )
    op.create_index(
        "ix_custom_tables_organization_id_name",
        "custom_tables",
        ["organization_id", "name"],
        unique=True,
    )


def downgrade() -> None:
    op.drop_index("ix_custom_tables_organization_id_name", table_name="custom_tables")
    op.drop_table("custom_tables")
