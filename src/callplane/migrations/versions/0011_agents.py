"""agents: branches and immutable commits; numbers route to a branch, looked up by number

Every existing agent gets a ``main`` branch whose first commit holds an empty config: an agent
was a name, and an empty config is exactly today's behaviour (the call's own fields, the
platform's defaults). Numbers routed to an agent route to its ``main``.

Revision ID: 0011
Revises: 0010
"""

import base64
import secrets
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

from callplane.models.base import JSONType

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Columns are only added (never altered): on SQLite an alter would rebuild ``agents``, and
    # dropping the old table would fire phone_numbers' ON DELETE SET NULL, unrouting every number.
    # (plain ADD COLUMN: a batch operation might rebuild the table)
    op.add_column(
        "agents", sa.Column("archived", sa.Boolean(), nullable=False, server_default=sa.false())
    )
    op.add_column("agents", sa.Column("tools_secret", sa.String(length=128), nullable=True))

    op.create_table(
        "agent_branches",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=63), nullable=False),
        sa.Column("head", sa.Uuid(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["agent_id"],
            ["agents.id"],
            name=op.f("fk_agent_branches_agent_id_agents"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_agent_branches_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_agent_branches")),
    )
    with op.batch_alter_table("agent_branches", schema=None) as batch_op:
        batch_op.create_index(
            "ix_agent_branches_organization_id_agent_id_name",
            ["organization_id", "agent_id", "name"],
            unique=True,
        )

    op.create_table(
        "agent_commits",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Integer(), nullable=False),
        sa.Column("parents", JSONType, nullable=False),
        sa.Column("branch", sa.String(length=63), nullable=False),
        sa.Column("author", sa.String(length=400), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("config", JSONType, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["agent_id"],
            ["agents.id"],
            name=op.f("fk_agent_commits_agent_id_agents"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_agent_commits_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_agent_commits")),
    )
    with op.batch_alter_table("agent_commits", schema=None) as batch_op:
        batch_op.create_index(
            "ix_agent_commits_organization_id_agent_id_created_at_id",
            ["organization_id", "agent_id", "created_at", "id"],
            unique=False,
        )

    op.add_column("phone_numbers", sa.Column("agent_branch_name", sa.String(length=63)))
    op.create_index("ix_phone_numbers_number", "phone_numbers", ["number"], unique=False)

    _give_every_agent_a_main_branch()


def _give_every_agent_a_main_branch() -> None:
    bind = op.get_bind()
    agents = sa.table(
        "agents",
        sa.column("id", sa.Integer()),
        sa.column("organization_id", sa.Integer()),
        sa.column("tools_secret", sa.String()),
    )
    branches = sa.table(
        "agent_branches",
        sa.column("organization_id", sa.Integer()),
        sa.column("id", sa.Uuid()),
        sa.column("agent_id", sa.Integer()),
        sa.column("name", sa.String()),
        sa.column("head", sa.Uuid()),
        sa.column("created_at", sa.DateTime(timezone=True)),
        sa.column("updated_at", sa.DateTime(timezone=True)),
    )
    commits = sa.table(
        "agent_commits",
        sa.column("organization_id", sa.Integer()),
        sa.column("id", sa.Uuid()),
        sa.column("agent_id", sa.Integer()),
        sa.column("parents", JSONType),
        sa.column("branch", sa.String()),
        sa.column("author", sa.String()),
        sa.column("message", sa.Text()),
        sa.column("config", JSONType),
        sa.column("created_at", sa.DateTime(timezone=True)),
    )
    now = datetime.now(UTC)
    if bind.dialect.name == "sqlite":
        now = now.replace(tzinfo=None)
    for agent_id, organization_id in bind.execute(
        sa.select(agents.c.id, agents.c.organization_id)
    ).all():
        commit_id = uuid.uuid4()
        bind.execute(
            commits.insert().values(
                organization_id=organization_id,
                id=commit_id,
                agent_id=agent_id,
                parents=[],
                branch="main",
                author="migration:0011",
                message="Initial configuration",
                config={},
                created_at=now,
            )
        )
        bind.execute(
            branches.insert().values(
                organization_id=organization_id,
                id=uuid.uuid4(),
                agent_id=agent_id,
                name="main",
                head=commit_id,
                created_at=now,
                updated_at=now,
            )
        )
        secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
        bind.execute(agents.update().where(agents.c.id == agent_id).values(tools_secret=secret))
    bind.execute(
        sa.text("UPDATE phone_numbers SET agent_branch_name = 'main' WHERE agent_id IS NOT NULL")
    )


def downgrade() -> None:
    with op.batch_alter_table("phone_numbers", schema=None) as batch_op:
        batch_op.drop_index("ix_phone_numbers_number")
        batch_op.drop_column("agent_branch_name")
    with op.batch_alter_table("agent_commits", schema=None) as batch_op:
        batch_op.drop_index("ix_agent_commits_organization_id_agent_id_created_at_id")
    op.drop_table("agent_commits")
    with op.batch_alter_table("agent_branches", schema=None) as batch_op:
        batch_op.drop_index("ix_agent_branches_organization_id_agent_id_name")
    op.drop_table("agent_branches")
    with op.batch_alter_table("agents", schema=None) as batch_op:
        batch_op.drop_column("tools_secret")
        batch_op.drop_column("archived")
