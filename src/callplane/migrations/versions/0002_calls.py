"""calls, call tags on calls, params index, idempotency keys, feedback

Revision ID: 0002
Revises: 0001
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from callplane.models.base import JSONType

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _org_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["organization_id"],
        ["organizations.id"],
        name=op.f(f"fk_{table}_organization_id_organizations"),
        ondelete="CASCADE",
    )


def _call_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["organization_id", "call_uuid"],
        ["calls.organization_id", "calls.id"],
        name=op.f(f"fk_{table}_organization_id_call_uuid_calls"),
        ondelete="CASCADE",
    )


def upgrade() -> None:
    op.create_table(
        "calls",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("simple_uuid", sa.Uuid(), nullable=False),
        sa.Column("from_number", sa.String(length=64), nullable=True),
        sa.Column("to_number", sa.String(length=64), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("duration", sa.Integer(), nullable=True),
        sa.Column("transcripts", JSONType, nullable=False),
        sa.Column("screen_pop_token", sa.String(length=255), nullable=True),
        sa.Column("call_prompt", sa.Text(), nullable=True),
        sa.Column("answered_by", sa.String(length=32), nullable=True),
        sa.Column("language", sa.String(length=32), nullable=True),
        sa.Column("transferred", sa.Boolean(), nullable=False),
        sa.Column("handoff_metadata", JSONType, nullable=True),
        sa.Column("direction", sa.String(length=16), nullable=True),
        sa.Column("voice_uuid", sa.Uuid(), nullable=True),
        sa.Column("agent_speaks_first", sa.Boolean(), nullable=True),
        sa.Column("agent_uuid", sa.Uuid(), nullable=True),
        sa.Column("agent_branch", sa.String(length=64), nullable=True),
        sa.Column("agent_commit_id", sa.String(length=64), nullable=True),
        sa.Column("agent_branch_name", sa.String(length=255), nullable=True),
        sa.Column("external_identifiers", JSONType, nullable=False),
        sa.Column("params", JSONType, nullable=False),
        sa.Column("cart", JSONType, nullable=True),
        sa.Column("analyzers", JSONType, nullable=False),
        sa.Column("analysis_results", JSONType, nullable=False),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("keyterms", JSONType, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        _org_fk("calls"),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_calls")),
    )
    with op.batch_alter_table("calls", schema=None) as batch_op:
        batch_op.create_index(
            "ix_calls_organization_id_created_at_id",
            ["organization_id", "created_at", "id"],
            unique=False,
        )
        batch_op.create_index(
            "ix_calls_organization_id_status_created_at_id",
            ["organization_id", "status", "created_at", "id"],
            unique=False,
        )

    op.create_table(
        "call_attributes",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("call_uuid", sa.Uuid(), nullable=False),
        sa.Column("source", sa.String(length=8), nullable=False),
        sa.Column("key_digest", sa.LargeBinary(length=32), nullable=False),
        sa.Column("value_digest", sa.LargeBinary(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        _call_fk("call_attributes"),
        sa.PrimaryKeyConstraint(
            "organization_id", "call_uuid", "source", "key_digest", name=op.f("pk_call_attributes")
        ),
    )
    with op.batch_alter_table("call_attributes", schema=None) as batch_op:
        batch_op.create_index(
            "ix_call_attributes_lookup",
            ["organization_id", "source", "key_digest", "value_digest", "created_at", "call_uuid"],
            unique=False,
        )

    op.create_table(
        "call_tag_links",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("call_uuid", sa.Uuid(), nullable=False),
        sa.Column("tag_uuid", sa.Uuid(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        _call_fk("call_tag_links"),
        sa.ForeignKeyConstraint(
            ["organization_id", "tag_uuid"],
            ["call_tags.organization_id", "call_tags.id"],
            name=op.f("fk_call_tag_links_organization_id_tag_uuid_call_tags"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "organization_id", "call_uuid", "tag_uuid", name=op.f("pk_call_tag_links")
        ),
    )
    with op.batch_alter_table("call_tag_links", schema=None) as batch_op:
        batch_op.create_index(
            "ix_call_tag_links_organization_id_tag_uuid",
            ["organization_id", "tag_uuid"],
            unique=False,
        )

    op.create_table(
        "call_idempotency_keys",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("request_digest", sa.String(length=64), nullable=False),
        sa.Column("response_status", sa.Integer(), nullable=True),
        sa.Column("response_body", JSONType, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        _org_fk("call_idempotency_keys"),
        sa.PrimaryKeyConstraint("organization_id", "key", name=op.f("pk_call_idempotency_keys")),
    )

    op.create_table(
        "feedback_entries",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("call_uuid", sa.Uuid(), nullable=False),
        sa.Column("transcript_index", sa.Integer(), nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("resolved", sa.Boolean(), nullable=False),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        _call_fk("feedback_entries"),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_feedback_entries")),
    )
    with op.batch_alter_table("feedback_entries", schema=None) as batch_op:
        batch_op.create_index(
            "ix_feedback_entries_organization_id_call_uuid_created_at",
            ["organization_id", "call_uuid", "created_at"],
            unique=False,
        )

    op.create_table(
        "feedback_notes",
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("feedback_uuid", sa.Uuid(), nullable=False),
        sa.Column("author_name", sa.String(length=255), nullable=False),
        sa.Column("note_text", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id", "feedback_uuid"],
            ["feedback_entries.organization_id", "feedback_entries.id"],
            name=op.f("fk_feedback_notes_organization_id_feedback_uuid_feedback_entries"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_feedback_notes")),
    )
    with op.batch_alter_table("feedback_notes", schema=None) as batch_op:
        batch_op.create_index(
            "ix_feedback_notes_organization_id_feedback_uuid_id",
            ["organization_id", "feedback_uuid", "id"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("feedback_notes", schema=None) as batch_op:
        batch_op.drop_index("ix_feedback_notes_organization_id_feedback_uuid_id")
    op.drop_table("feedback_notes")
    with op.batch_alter_table("feedback_entries", schema=None) as batch_op:
        batch_op.drop_index("ix_feedback_entries_organization_id_call_uuid_created_at")
    op.drop_table("feedback_entries")
    op.drop_table("call_idempotency_keys")
    with op.batch_alter_table("call_tag_links", schema=None) as batch_op:
        batch_op.drop_index("ix_call_tag_links_organization_id_tag_uuid")
    op.drop_table("call_tag_links")
    with op.batch_alter_table("call_attributes", schema=None) as batch_op:
        batch_op.drop_index("ix_call_attributes_lookup")
    op.drop_table("call_attributes")
    with op.batch_alter_table("calls", schema=None) as batch_op:
        batch_op.drop_index("ix_calls_organization_id_status_created_at_id")
        batch_op.drop_index("ix_calls_organization_id_created_at_id")
    op.drop_table("calls")
