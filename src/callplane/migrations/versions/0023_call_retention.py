"""calls: transcript_deleted_at, and the index the retention job finds expired calls by

Revision ID: 0023
Revises: 0022
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_KEPT = "transcript_deleted_at IS NULL"


def upgrade() -> None:
    op.add_column(
        "calls", sa.Column("transcript_deleted_at", sa.DateTime(timezone=True), nullable=True)
    )
    op.create_index(
        "ix_calls_organization_id_agent_commit_id_ended_at",
        "calls",
        ["organization_id", "agent_commit_id", "ended_at"],
        sqlite_where=sa.text(_KEPT),
        postgresql_where=sa.text(_KEPT),
    )


def downgrade() -> None:
    op.drop_index("ix_calls_organization_id_agent_commit_id_ended_at", table_name="calls")
    with op.batch_alter_table("calls") as batch:
        batch.drop_column("transcript_deleted_at")
