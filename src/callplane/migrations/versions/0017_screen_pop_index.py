"""calls: an index for the screen-pop lookup (GET /calls/screen_pop/{token})

Revision ID: 0017
Revises: 0016
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TRANSFERRED = "screen_pop_token IS NOT NULL"


def upgrade() -> None:
    op.create_index(
        "ix_calls_organization_id_screen_pop_token",
        "calls",
        ["organization_id", "screen_pop_token"],
        unique=False,
        sqlite_where=sa.text(_TRANSFERRED),
        postgresql_where=sa.text(_TRANSFERRED),
    )


def downgrade() -> None:
    op.drop_index("ix_calls_organization_id_screen_pop_token", table_name="calls")
