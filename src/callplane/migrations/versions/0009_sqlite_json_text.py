"""custom-data JSON columns on SQLite: declared TEXT, so values read back exactly

A column declared ``JSON`` has NUMERIC affinity on SQLite: a top-level number written to it is
converted on the way in (``1.0`` is stored as the integer 1, ``-0.0`` as 0, a 24-digit integer as
a float), so a value accepted once was read back different. Tables created since are declared
TEXT (``custom_data.types``); this declares the older ones' JSON columns TEXT too, and writes the
numbers already converted back as JSON text of the same value (an integer exactly, a float with
17 significant digits, which give back the same double): they read as they read before, and
every later write is kept exactly. PostgreSQL (JSONB) needs nothing.

Only the declared type changes, which touches no stored row, index or foreign key, so it is done
the way SQLite documents for such changes (ALTER TABLE, "other kinds of table schema changes"):
the table's ``CREATE TABLE`` text is edited in ``sqlite_schema`` and the schema version bumped,
in the migration's transaction. Rebuilding the table instead would need foreign keys off, which
SQLite does not allow inside a transaction, and other tables' references would follow a rename.

Revision ID: 0009
Revises: 0008
"""

import re
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: A column definition line of a custom-data table declared JSON (names are [a-z][a-z0-9_]*).
_JSON_COLUMN = re.compile(r"(\n\t([a-z][a-z0-9_]*) )JSON\b")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    tables = bind.execute(
        sa.text(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name LIKE 'udt\\_%' "
            "ESCAPE '\\'"
        )
    ).all()
    old = {name: [m.group(2) for m in _JSON_COLUMN.finditer(sql)] for name, sql in tables}
    changed = [(name, _JSON_COLUMN.sub(r"\1TEXT", sql)) for name, sql in tables if old[name]]
    if not changed:
        return
    version = bind.exec_driver_sql("PRAGMA schema_version").scalar_one()
    bind.exec_driver_sql("PRAGMA writable_schema = ON")
    try:
        for name, sql in changed:
            bind.execute(
                sa.text("UPDATE sqlite_master SET sql = :sql WHERE type = 'table' AND name = :n"),
                {"sql": sql, "n": name},
            )
        bind.exec_driver_sql(f"PRAGMA schema_version = {int(version) + 1}")
    finally:
        bind.exec_driver_sql("PRAGMA writable_schema = OFF")
    for name, _sql in changed:
        for column in old[name]:
            bind.exec_driver_sql(
                f'UPDATE "{name}" SET "{column}" = CASE typeof("{column}") '  # noqa: S608
                f"WHEN 'real' THEN printf('%!.17g', \"{column}\") "
                f'ELSE CAST("{column}" AS TEXT) END '
                f"WHERE typeof(\"{column}\") IN ('integer', 'real')"
            )


def downgrade() -> None:
    """Nothing to undo: TEXT is what the current code declares."""
