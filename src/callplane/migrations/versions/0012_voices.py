"""voices gain an engine (docs/voices.md)

``NULL`` is the server's default engine (CALLPLANE_VOICE_ENGINE), so every voice that existed
before keeps sounding as it did.

Revision ID: 0012
Revises: 0011
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("voices") as batch:
        batch.add_column(sa.Column("engine", sa.String(length=120), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("voices") as batch:
        batch.drop_column("engine")
