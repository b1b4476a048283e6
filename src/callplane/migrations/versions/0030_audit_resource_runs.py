"""audit_events: the resource filter's index is kept by runs of numbers (``seq / 16384``)

The index on (organization_id, resource_id, seq) put each sealed event about a random resource
on a leaf page of its own: a page written per event, on PostgreSQL a full-page image the first
time after each checkpoint. Keyed first by the event's run of 16,384 numbers, a batch of sealing
writes only into the leaves of the newest run; the filter reads each run's entries for the
resource (``audit_log.router``).

Revision ID: 0030
Revises: 0029
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0030"
down_revision: str | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD = "ix_audit_events_organization_id_resource_id_seq"
_NEW = "ix_audit_events_organization_id_run_resource_id_seq"


def upgrade() -> None:
    op.drop_index(_OLD, table_name="audit_events")
    op.create_index(
        _NEW,
        "audit_events",
        ["organization_id", sa.text("(seq / 16384)"), "resource_id", "seq"],
    )


def downgrade() -> None:
    op.drop_index(_NEW, table_name="audit_events")
    op.create_index(_OLD, "audit_events", ["organization_id", "resource_id", "seq"])
