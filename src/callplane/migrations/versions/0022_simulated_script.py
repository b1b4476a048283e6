"""calls: a per-call script for the simulated network (POST /calls ``simulate``), and indexes
for the dashboard's calls filtered by number

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


_NUMBER_INDEXES = {
    "ix_calls_organization_id_to_number_created_at": "to_number",
    "ix_calls_organization_id_from_number_created_at": "from_number",
}


def upgrade() -> None:
    with op.batch_alter_table("calls") as batch_op:
        batch_op.add_column(sa.Column("simulate", JSONType, nullable=True))
    for name, column in _NUMBER_INDEXES.items():
        op.create_index(name, "calls", ["organization_id", column, "created_at"])


def downgrade() -> None:
    for name in _NUMBER_INDEXES:
        op.drop_index(name, table_name="calls")
    with op.batch_alter_table("calls") as batch_op:
        batch_op.drop_column("simulate")
