"""knowledge: knowledge bases, documents, chunks and their full-text index

Revision ID: 0020
Revises: 0019

SQLite: two FTS5 tables without content of their own (the text stays in ``knowledge_chunks``),
one stemming English (porter), one keeping words as written; triggers keep them in step with the
chunks, in the same statement, so a deleted document is gone from search at once. A row is
indexed as ``scope`` (``k<knowledge base id>``: a search matches inside one knowledge base) and
``body`` (title path and text).

PostgreSQL: a stored generated ``tsvector`` of title path and text in the chunk's own text search
configuration, with a GIN index; rows up to 8 KB stay whole (``toast_tuple_target``).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEARCH_CONFIG = sa.String(length=32).with_variant(postgresql.REGCONFIG(), "postgresql")
#: FTS5 table -> (tokenizer, which chunks it holds).
FTS_TABLES = {
    "knowledge_chunks_fts_english": ("porter unicode61 remove_diacritics 2", "= 'english'"),
    "knowledge_chunks_fts_simple": ("unicode61 remove_diacritics 2", "<> 'english'"),
}
_SCOPE = "'k' || {row}.knowledge_base_id"
_BODY = "{row}.title || char(10) || {row}.text"


def upgrade() -> None:
    op.create_table(
        "knowledge_bases",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("uuid", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("language", sa.String(length=64), nullable=False),
        sa.Column("search_config", SEARCH_CONFIG, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_knowledge_bases_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_bases")),
    )
    op.create_index(
        "ix_knowledge_bases_organization_id_name",
        "knowledge_bases",
        ["organization_id", "name"],
        unique=False,
    )
    op.create_index(
        "ix_knowledge_bases_organization_id_uuid",
        "knowledge_bases",
        ["organization_id", "uuid"],
        unique=True,
    )
    op.create_table(
        "knowledge_documents",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("uuid", sa.Uuid(), nullable=False),
        sa.Column("knowledge_base_id", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=255), nullable=False),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("content_type", sa.String(length=64), nullable=False),
        sa.Column("characters", sa.Integer(), nullable=False),
        sa.Column("chunk_count", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["knowledge_base_id"],
            ["knowledge_bases.id"],
            name=op.f("fk_knowledge_documents_knowledge_base_id_knowledge_bases"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_knowledge_documents_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_documents")),
    )
    op.create_index(
        "ix_knowledge_documents_organization_id_knowledge_base_id_id",
        "knowledge_documents",
        ["organization_id", "knowledge_base_id", "id"],
        unique=False,
    )
    op.create_index(
        "ix_knowledge_documents_organization_id_uuid",
        "knowledge_documents",
        ["organization_id", "uuid"],
        unique=True,
    )
    op.create_table(
        "knowledge_chunks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("organization_id", sa.Integer(), nullable=False),
        sa.Column("knowledge_base_id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("search_config", SEARCH_CONFIG, nullable=False),
        sa.ForeignKeyConstraint(
            ["document_id"],
            ["knowledge_documents.id"],
            name=op.f("fk_knowledge_chunks_document_id_knowledge_documents"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["knowledge_base_id"],
            ["knowledge_bases.id"],
            name=op.f("fk_knowledge_chunks_knowledge_base_id_knowledge_bases"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_knowledge_chunks_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_chunks")),
    )
    op.create_index(
        "ix_knowledge_chunks_organization_id_document_id_position",
        "knowledge_chunks",
        ["organization_id", "document_id", "position"],
        unique=False,
    )
    op.create_index(
        "ix_knowledge_chunks_organization_id_knowledge_base_id",
        "knowledge_chunks",
        ["organization_id", "knowledge_base_id"],
        unique=False,
    )
    if op.get_bind().dialect.name == "postgresql":
        # A chunk (text + its tsvector) is 2-3 KB: kept in its row rather than in TOAST, a
        # search reads each match's vector without a second lookup (10x fewer buffers).
        op.execute("ALTER TABLE knowledge_chunks SET (toast_tuple_target = 8160)")
        op.execute(
            "ALTER TABLE knowledge_chunks ADD COLUMN search_vector tsvector GENERATED ALWAYS AS "
            "(to_tsvector(search_config, title || ' ' || text)) STORED"
        )
        op.execute(
            "CREATE INDEX ix_knowledge_chunks_search_vector ON knowledge_chunks "
            "USING gin (search_vector)"
        )
        return
    for table, (tokenizer, holds) in FTS_TABLES.items():
        op.execute(
            f"CREATE VIRTUAL TABLE {table} USING fts5(scope, body, content='', "
            f"tokenize='{tokenizer}')"
        )
        new = {"row": "new"}
        old = {"row": "old"}
        op.execute(
            f"CREATE TRIGGER {table}_insert AFTER INSERT ON knowledge_chunks "  # noqa: S608 (constants)
            f"WHEN new.search_config {holds} BEGIN "
            f"INSERT INTO {table} (rowid, scope, body) VALUES "
            f"(new.id, {_SCOPE.format(**new)}, {_BODY.format(**new)}); END"
        )
        # A contentless table forgets a row when told the values it was indexed with.
        op.execute(
            f"CREATE TRIGGER {table}_delete AFTER DELETE ON knowledge_chunks "  # noqa: S608
            f"WHEN old.search_config {holds} BEGIN "
            f"INSERT INTO {table} ({table}, rowid, scope, body) VALUES "
            f"('delete', old.id, {_SCOPE.format(**old)}, {_BODY.format(**old)}); END"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for table in FTS_TABLES:
            op.execute(f"DROP TRIGGER IF EXISTS {table}_delete")
            op.execute(f"DROP TRIGGER IF EXISTS {table}_insert")
            op.execute(f"DROP TABLE IF EXISTS {table}")
    op.drop_index(
        "ix_knowledge_chunks_organization_id_knowledge_base_id", table_name="knowledge_chunks"
    )
    op.drop_index(
        "ix_knowledge_chunks_organization_id_document_id_position", table_name="knowledge_chunks"
    )
    op.drop_table("knowledge_chunks")
    op.drop_index("ix_knowledge_documents_organization_id_uuid", table_name="knowledge_documents")
    op.drop_index(
        "ix_knowledge_documents_organization_id_knowledge_base_id_id",
        table_name="knowledge_documents",
    )
    op.drop_table("knowledge_documents")
    op.drop_index("ix_knowledge_bases_organization_id_uuid", table_name="knowledge_bases")
    op.drop_index("ix_knowledge_bases_organization_id_name", table_name="knowledge_bases")
    op.drop_table("knowledge_bases")
