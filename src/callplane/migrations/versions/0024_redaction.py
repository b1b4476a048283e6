"""calls: redactions, what redaction replaced on the call (entity -> count, never the values)

Revision ID: 0024
Revises: 0023
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from callplane.models.base import JSONType

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("calls") as batch_op:
        batch_op.add_column(sa.Column("redactions", JSONType, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("calls") as batch_op:
        batch_op.drop_column("redactions")
