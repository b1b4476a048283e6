"""web calls: the tokens a website starts a web call with

Revision ID: 0016
Revises: 0015
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from callplane.models.base import JSONType

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "web_call_tokens",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("token_digest", sa.LargeBinary(length=32), nullable=False),
        sa.Column("agent_uuid", sa.Uuid(), nullable=False),
        sa.Column("agent_branch_name", sa.String(length=255), nullable=True),
        sa.Column("agent_commit_id", sa.String(length=64), nullable=True),
        sa.Column("params", JSONType, nullable=False),
        sa.Column("allowed_origin", sa.Text(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_web_call_tokens_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_web_call_tokens")),
    )
    op.create_index(
        "ix_web_call_tokens_token_digest", "web_call_tokens", ["token_digest"], unique=True
    )
    op.create_index(
        "ix_web_call_tokens_allowed_origin_expires_at",
        "web_call_tokens",
        ["allowed_origin", "expires_at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_web_call_tokens_allowed_origin_expires_at", table_name="web_call_tokens")
    op.drop_index("ix_web_call_tokens_token_digest", table_name="web_call_tokens")
    op.drop_table("web_call_tokens")
