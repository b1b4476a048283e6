"""agents: tests, test runs and replays, the merge gate's switch, traffic splits

Revision ID: 0019
Revises: 0018
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from callplane.models.base import JSONType

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_QUEUED = "status = 'running'"


def _owned(table: str) -> list[sa.Constraint]:
    return [
        sa.ForeignKeyConstraint(
            ["agent_id"],
            ["agents.id"],
            name=op.f(f"fk_{table}_agent_id_agents"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f(f"fk_{table}_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f(f"pk_{table}")),
    ]


def upgrade() -> None:
    # Plain ADD COLUMN: a batch operation would rebuild ``agents`` on SQLite (see 0011).
    op.add_column(
        "agents",
        sa.Column(
            "merge_requires_passing_tests", sa.Boolean(), nullable=False, server_default=sa.false()
        ),
    )
    op.add_column("agents", sa.Column("traffic", JSONType, nullable=True))

    op.create_table(
        "agent_tests",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("spec", JSONType, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        *_owned("agent_tests"),
    )
    op.create_index(
        "ix_agent_tests_organization_id_agent_id_name",
        "agent_tests",
        ["organization_id", "agent_id", "name"],
        unique=True,
    )

    op.create_table(
        "agent_runs",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("ref", sa.String(length=64), nullable=False),
        sa.Column("commit_id", sa.Uuid(), nullable=False),
        sa.Column("mode", sa.String(length=8), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("work", JSONType, nullable=False),
        sa.Column("results", JSONType, nullable=False),
        sa.Column("error", sa.String(length=2000), nullable=True),
        sa.Column("lease_token", sa.Uuid(), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("kind IN ('tests', 'replay')", name=op.f("ck_agent_runs_kind")),
        sa.CheckConstraint("mode IN ('text', 'audio')", name=op.f("ck_agent_runs_mode")),
        sa.CheckConstraint(
            "status IN ('running', 'passed', 'failed', 'error', 'done')",
            name=op.f("ck_agent_runs_status"),
        ),
        *_owned("agent_runs"),
    )
    op.create_index(
        "ix_agent_runs_organization_id_agent_id_kind_created_at",
        "agent_runs",
        ["organization_id", "agent_id", "kind", "created_at"],
    )
    op.create_index(
        "ix_agent_runs_organization_id_agent_id_commit_id",
        "agent_runs",
        ["organization_id", "agent_id", "commit_id"],
    )
    op.create_index(
        "ix_agent_runs_work_queue",
        "agent_runs",
        ["lease_expires_at"],
        sqlite_where=sa.text(_QUEUED),
        postgresql_where=sa.text(_QUEUED),
    )
    op.create_index(
        "ix_calls_organization_id_agent_uuid_created_at",
        "calls",
        ["organization_id", "agent_uuid", "created_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_calls_organization_id_agent_uuid_created_at", table_name="calls")
    op.drop_table("agent_runs")
    op.drop_table("agent_tests")
    with op.batch_alter_table("agents") as batch_op:
        batch_op.drop_column("traffic")
        batch_op.drop_column("merge_requires_passing_tests")
