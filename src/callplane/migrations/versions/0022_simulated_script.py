"""calls: a per-call script for the simulated network (POST /calls ``simulate``)

Revision ID: 0022
Revises: 0021
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from callplane.models.base import JSONType

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("calls") as batch_op:
        batch_op.add_column(sa.Column("simulate", JSONType, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("calls") as batch_op:
        batch_op.drop_column("simulate")
