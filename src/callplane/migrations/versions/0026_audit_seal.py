"""audit_events: sealed after the change's commit; a row id, seq and hash empty until sealed

The events' primary key was (organization_id, seq); it becomes a row id, the order sealing
numbers events in, and (organization_id, seq) a unique index. Existing events are all sealed.
SQLite cannot change a primary key in place: the table is rebuilt, its events copied in chain
order.

Revision ID: 0026
Revises: 0025
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FIELDS = (
    "organization_id, seq, at, actor, action, resource_type, resource_id, ip, request_id, hash"
)
_FILTERS = ("actor", "action", "resource_id")
_UNSEALED = sa.text("seq IS NULL")


def _columns(sealed: bool) -> list[sa.Column[Any]]:
    return [
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=not sealed),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=300), nullable=False),
        sa.Column("action", sa.String(length=100), nullable=False),
        sa.Column("resource_type", sa.String(length=50), nullable=False),
        sa.Column("resource_id", sa.String(length=300), nullable=True),
        sa.Column("ip", sa.String(length=64), nullable=True),
        sa.Column("request_id", sa.String(length=64), nullable=True),
        sa.Column("hash", sa.String(length=64), nullable=not sealed),
    ]


def _foreign_key() -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["organization_id"],
        ["organizations.id"],
        name=op.f("fk_audit_events_organization_id_organizations"),
        ondelete="CASCADE",
    )


def _drop_indexes() -> None:
    for column in _FILTERS:
        op.drop_index(f"ix_audit_events_organization_id_{column}_seq", table_name="audit_events")
    op.drop_index("ix_audit_events_organization_id_at", table_name="audit_events")


def _create_indexes() -> None:
    op.create_index("ix_audit_events_organization_id_at", "audit_events", ["organization_id", "at"])
    for column in _FILTERS:
        op.create_index(
            f"ix_audit_events_organization_id_{column}_seq",
            "audit_events",
            ["organization_id", column, "seq"],
        )


def _rebuild(columns: list[sa.Column[Any]], key: sa.PrimaryKeyConstraint) -> None:
    """SQLite: a new table of the new shape, the events copied in chain order."""
    _drop_indexes()
    op.create_table("audit_events_new", *columns, _foreign_key(), key)
    op.execute(
        f"INSERT INTO audit_events_new ({_FIELDS}) "  # noqa: S608 - constant column names
        f"SELECT {_FIELDS} FROM audit_events ORDER BY organization_id, seq"
    )
    op.drop_table("audit_events")
    op.rename_table("audit_events_new", "audit_events")
    _create_indexes()


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild(
            [sa.Column("id", sa.Integer(), nullable=False), *_columns(sealed=False)],
            sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_events")),
        )
    else:
        op.drop_constraint("pk_audit_events", "audit_events", type_="primary")
        op.add_column("audit_events", sa.Column("id", sa.Integer(), autoincrement=True))
        op.execute("CREATE SEQUENCE audit_events_id_seq OWNED BY audit_events.id")
        op.execute(
            "UPDATE audit_events SET id = numbered.n FROM (SELECT organization_id, seq, "
            "row_number() OVER (ORDER BY organization_id, seq) AS n FROM audit_events) numbered "
            "WHERE audit_events.organization_id = numbered.organization_id "
            "AND audit_events.seq = numbered.seq"
        )
        op.execute(
            "SELECT setval('audit_events_id_seq', coalesce(max(id), 0) + 1, false) "
            "FROM audit_events"
        )
        op.execute(
            "ALTER TABLE audit_events ALTER COLUMN id SET DEFAULT nextval('audit_events_id_seq'), "
            "ALTER COLUMN id SET NOT NULL, ALTER COLUMN seq DROP NOT NULL, "
            "ALTER COLUMN hash DROP NOT NULL"
        )
        op.create_primary_key("pk_audit_events", "audit_events", ["id"])
    op.create_index(
        "ix_audit_events_organization_id_seq",
        "audit_events",
        ["organization_id", "seq"],
        unique=True,
    )
    op.create_index(
        "ix_audit_events_unsealed",
        "audit_events",
        ["organization_id", "id"],
        sqlite_where=_UNSEALED,
        postgresql_where=_UNSEALED,
    )


def downgrade() -> None:
    # An unsealed event has no number to be keyed by in the old shape: it goes.
    op.execute("DELETE FROM audit_events WHERE seq IS NULL")
    op.drop_index("ix_audit_events_unsealed", table_name="audit_events")
    op.drop_index("ix_audit_events_organization_id_seq", table_name="audit_events")
    if op.get_bind().dialect.name == "sqlite":
        _rebuild(
            _columns(sealed=True),
            sa.PrimaryKeyConstraint("organization_id", "seq", name=op.f("pk_audit_events")),
        )
        return
    op.drop_constraint("pk_audit_events", "audit_events", type_="primary")
    op.drop_column("audit_events", "id")
    op.execute(
        "ALTER TABLE audit_events ALTER COLUMN seq SET NOT NULL, ALTER COLUMN hash SET NOT NULL"
    )
    op.create_primary_key("pk_audit_events", "audit_events", ["organization_id", "seq"])
