"""audit_events: keyed by (organization_id, seq), no row id, no foreign key

Sealing writes every event once, into the table and each of its indexes. The row id was used by
nothing (an event is known by its number in its organization's chain), so the unique index on
(organization_id, seq) becomes the key and the id's own index goes; on SQLite the table is
stored in that key's order (WITHOUT ROWID), one B-tree instead of two. The foreign key checked
the organization once per sealed event, though sealing holds the organization's chain head
(which keeps its key, and goes with the organization) locked while it writes: a trigger on
``organizations`` now removes an organization's events when it is deleted.

SQLite cannot change a primary key in place: the table is rebuilt, its events copied in chain
order.

Revision ID: 0029
Revises: 0028
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FIELDS = (
    "organization_id, seq, at, actor, action, resource_type, resource_id, ip, request_id, hash"
)
_FILTERS = ("actor", "action", "resource_id")
_SEQ_INDEX = "ix_audit_events_organization_id_seq"
_KEY = "fk_audit_events_organization_id_organizations"
_TRIGGER = "audit_events_of_deleted_organization"


def _columns() -> list[sa.Column[Any]]:
    return [
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=300), nullable=False),
        sa.Column("action", sa.String(length=100), nullable=False),
        sa.Column("resource_type", sa.String(length=50), nullable=False),
        sa.Column("resource_id", sa.String(length=300), nullable=True),
        sa.Column("ip", sa.String(length=64), nullable=True),
        sa.Column("request_id", sa.String(length=64), nullable=True),
        sa.Column("hash", sa.String(length=64), nullable=False),
    ]


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


def _rebuild(*shape: Any, **options: Any) -> None:
    """SQLite: a new table of the new shape, the events copied in chain order."""
    _drop_indexes()
    op.create_table("audit_events_new", *shape, **options)
    op.execute(
        f"INSERT INTO audit_events_new ({_FIELDS}) "  # noqa: S608 - constant column names
        f"SELECT {_FIELDS} FROM audit_events ORDER BY organization_id, seq"
    )
    op.drop_table("audit_events")
    op.rename_table("audit_events_new", "audit_events")
    _create_indexes()


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index(_SEQ_INDEX, table_name="audit_events")
        _rebuild(
            *_columns(),
            sa.PrimaryKeyConstraint("organization_id", "seq", name=op.f("pk_audit_events")),
            sqlite_with_rowid=False,
        )
        op.execute(
            "CREATE TRIGGER audit_events_of_deleted_organization AFTER DELETE ON organizations "
            "FOR EACH ROW BEGIN DELETE FROM audit_events WHERE organization_id = OLD.id; END"
        )
        return
    op.drop_constraint(_KEY, "audit_events", type_="foreignkey")
    op.drop_constraint("pk_audit_events", "audit_events", type_="primary")
    op.drop_column("audit_events", "id")  # its sequence, owned by it, goes with it
    op.drop_index(_SEQ_INDEX, table_name="audit_events")
    op.create_primary_key("pk_audit_events", "audit_events", ["organization_id", "seq"])
    op.execute(
        "CREATE FUNCTION audit_events_of_deleted_organization() RETURNS trigger "
        "LANGUAGE plpgsql AS $$ BEGIN "
        "DELETE FROM audit_events WHERE organization_id = OLD.id; RETURN NULL; END $$"
    )
    op.execute(
        "CREATE TRIGGER audit_events_of_deleted_organization AFTER DELETE ON organizations "
        "FOR EACH ROW EXECUTE FUNCTION audit_events_of_deleted_organization()"
    )


def downgrade() -> None:
    op.execute(f"DROP TRIGGER {_TRIGGER}" + ("" if _sqlite() else " ON organizations"))
    op.execute(
        "DELETE FROM audit_events WHERE organization_id NOT IN (SELECT id FROM organizations)"
    )
    if _sqlite():
        _rebuild(
            sa.Column("id", sa.Integer(), nullable=False),
            *_columns(),
            sa.ForeignKeyConstraint(
                ["organization_id"], ["organizations.id"], name=op.f(_KEY), ondelete="CASCADE"
            ),
            sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_events")),
        )
    else:
        op.execute(f"DROP FUNCTION {_TRIGGER}()")
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
            "ALTER COLUMN id SET NOT NULL"
        )
        op.create_primary_key("pk_audit_events", "audit_events", ["id"])
        op.create_foreign_key(
            _KEY, "audit_events", "organizations", ["organization_id"], ["id"], ondelete="CASCADE"
        )
    op.create_index(_SEQ_INDEX, "audit_events", ["organization_id", "seq"], unique=True)


def _sqlite() -> bool:
    return op.get_bind().dialect.name == "sqlite"
