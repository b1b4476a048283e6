"""knowledge: per knowledge base word counts, so a PostgreSQL search ranks a bounded set

Revision ID: 0025
Revises: 0024

PostgreSQL only (SQLite's FTS5 ranks inside its own index and needs nothing): the table
``knowledge_chunks_fts_terms`` holds, for each knowledge base and each lexeme of its chunks'
``search_vector``, how many chunks hold it. Statement triggers on ``knowledge_chunks`` keep it
in step in the same transaction (transition tables: one grouped upsert per statement, not one
per row). A search reads it to find which of the question's words are rare enough to pick its
candidates through the GIN index (``knowledge.search``): ranking every chunk that holds a
common word read and ranked a third of the table at 100,000 chunks.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "knowledge_chunks_fts_terms"

# Lexemes are upserted in key order, so two statements never wait on each other in a cycle.
_COUNT = """
    SELECT r.organization_id, r.knowledge_base_id, l.lexeme, count(*) AS chunks
    FROM {rows} AS r CROSS JOIN LATERAL unnest(r.search_vector) AS l
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
"""


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        f"CREATE TABLE {TABLE} ("
        "organization_id integer NOT NULL REFERENCES organizations (id) ON DELETE CASCADE, "
        "knowledge_base_id integer NOT NULL REFERENCES knowledge_bases (id) ON DELETE CASCADE, "
        "lexeme text NOT NULL, chunks integer NOT NULL, "
        f"CONSTRAINT pk_{TABLE} PRIMARY KEY (organization_id, knowledge_base_id, lexeme))"
    )
    op.execute(
        f"CREATE FUNCTION {TABLE}_add() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        f"INSERT INTO {TABLE} (organization_id, knowledge_base_id, lexeme, chunks) "
        + _COUNT.format(rows="added")
        + "ON CONFLICT (organization_id, knowledge_base_id, lexeme) "
        f"DO UPDATE SET chunks = {TABLE}.chunks + excluded.chunks; "
        "RETURN NULL; END $$"
    )
    op.execute(
        f"CREATE FUNCTION {TABLE}_remove() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "  # noqa: S608 (constants)
        f"UPDATE {TABLE} AS t SET chunks = t.chunks - g.chunks FROM ("
        + _COUNT.format(rows="removed")
        + ") AS g WHERE t.organization_id = g.organization_id "
        "AND t.knowledge_base_id = g.knowledge_base_id AND t.lexeme = g.lexeme; "
        "RETURN NULL; END $$"
    )
    op.execute(
        f"CREATE TRIGGER {TABLE}_insert AFTER INSERT ON knowledge_chunks "
        f"REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION {TABLE}_add()"
    )
    op.execute(
        f"CREATE TRIGGER {TABLE}_delete AFTER DELETE ON knowledge_chunks "
        f"REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION {TABLE}_remove()"
    )
    # The chunks written before this migration.
    op.execute(
        f"INSERT INTO {TABLE} (organization_id, knowledge_base_id, lexeme, chunks) "  # noqa: S608
        + _COUNT.format(rows="knowledge_chunks")
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(f"DROP TRIGGER IF EXISTS {TABLE}_delete ON knowledge_chunks")
    op.execute(f"DROP TRIGGER IF EXISTS {TABLE}_insert ON knowledge_chunks")
    op.execute(f"DROP FUNCTION IF EXISTS {TABLE}_remove()")
    op.execute(f"DROP FUNCTION IF EXISTS {TABLE}_add()")
    op.execute(f"DROP TABLE IF EXISTS {TABLE}")
