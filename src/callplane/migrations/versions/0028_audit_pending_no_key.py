"""audit_pending: no foreign key to organizations

A pending event's organization is the authenticated request's own, so the reference check proved
nothing the request had not; on PostgreSQL it also locked the organization's row (FOR KEY SHARE)
in every audited write, and concurrent writes of one organization shared that lock through a
multixact, the largest part of what an event cost a write there. Sealing drops the pending
events of an organization that no longer exists (``audit.seal``); sealed events keep theirs.

Revision ID: 0028
Revises: 0027
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_KEY = "fk_audit_pending_organization_id_organizations"


def upgrade() -> None:
    with op.batch_alter_table("audit_pending") as batch:
        batch.drop_constraint(_KEY, type_="foreignkey")


def downgrade() -> None:
    op.execute(
        "DELETE FROM audit_pending WHERE organization_id NOT IN (SELECT id FROM organizations)"
    )
    with op.batch_alter_table("audit_pending") as batch:
        batch.create_foreign_key(
            _KEY, "organizations", ["organization_id"], ["id"], ondelete="CASCADE"
        )
