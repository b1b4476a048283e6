"""retention: the oldest call events and webhook deliveries, found by an index

The retention purge (CALLPLANE_RETENTION_DAYS, engine/retention.py) deletes, in small batches,
the rows older than the cutoff across every organization: without these indexes each batch
would scan the whole table.

Revision ID: 0014
Revises: 0012
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0014"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_call_events_at", "call_events", ["at"])
    op.create_index("ix_webhook_deliveries_created_at", "webhook_deliveries", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_webhook_deliveries_created_at", table_name="webhook_deliveries")
    op.drop_index("ix_call_events_at", table_name="call_events")
