"""the overview's indexes (issue 29): an organization's call events of one type by time (turn
latency, tool calls), and its webhook delivery attempts by time (failure rate)

Revision ID: 0015
Revises: 0014
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_call_events_organization_id_type_at", "call_events", ["organization_id", "type", "at"]
    )
    op.create_index(
        "ix_webhook_deliveries_organization_id_created_at",
        "webhook_deliveries",
        ["organization_id", "created_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_webhook_deliveries_organization_id_created_at", "webhook_deliveries")
    op.drop_index("ix_call_events_organization_id_type_at", "call_events")
