"""Knowledge bases, their documents and the documents' chunks (docs/knowledge.md).

A chunk is what a search finds: about 1,000 characters of one document with the headings it sits
under. Each database indexes chunks with its own full-text engine, kept in step by the database
itself (migration 0020), so nothing here writes an index:

- SQLite: FTS5 tables ``knowledge_chunks_fts_english`` (porter stemmer) and
  ``knowledge_chunks_fts_simple`` (words as written), filled and emptied by triggers on this table.
- PostgreSQL: ``search_vector``, a stored generated ``tsvector`` column with a GIN index, stemmed
  with the chunk's ``search_config``; and ``knowledge_chunks_fts_terms``, how many chunks of each
  knowledge base hold each lexeme, counted by triggers (migration 0025) for the search to pick
  its candidates by the rarest words.

Neither is declared on the models (they exist on one backend only); ``DATABASE_ONLY`` names them
so the drift check leaves them alone.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.dialects.postgresql import REGCONFIG
from sqlalchemy.orm import Mapped, mapped_column

from callplane.models.base import Base, utcnow

#: The text search configuration: ``regconfig`` on PostgreSQL (its generated column needs an
#: immutable expression), the same name as text on SQLite (it picks the FTS5 table).
SearchConfig = String(32).with_variant(REGCONFIG(), "postgresql")

#: What migration 0020 adds beside the models, per backend.
FTS_TABLE_PREFIX = "knowledge_chunks_fts"
SEARCH_VECTOR = "search_vector"
SEARCH_INDEX = "ix_knowledge_chunks_search_vector"


class KnowledgeBase(Base):
    __tablename__ = "knowledge_bases"
    __table_args__ = (
        Index("ix_knowledge_bases_organization_id_uuid", "organization_id", "uuid", unique=True),
        Index("ix_knowledge_bases_organization_id_name", "organization_id", "name"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    organization_id: Mapped[int] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    uuid: Mapped[uuid.UUID] = mapped_column(default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(255))
    #: BCP 47, as given (``es-US``).
    language: Mapped[str] = mapped_column(String(64))
    #: The text search configuration the language maps to (``spanish``; ``simple``: none).
    search_config: Mapped[str] = mapped_column(SearchConfig)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class KnowledgeDocument(Base):
    __tablename__ = "knowledge_documents"
    __table_args__ = (
        Index(
            "ix_knowledge_documents_organization_id_uuid", "organization_id", "uuid", unique=True
        ),
        Index(
            "ix_knowledge_documents_organization_id_knowledge_base_id_id",
            "organization_id",
            "knowledge_base_id",
            "id",
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    organization_id: Mapped[int] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    uuid: Mapped[uuid.UUID] = mapped_column(default=uuid.uuid4)
    knowledge_base_id: Mapped[int] = mapped_column(
        ForeignKey("knowledge_bases.id", ondelete="CASCADE")
    )
    title: Mapped[str] = mapped_column(String(255))
    url: Mapped[str | None] = mapped_column(Text, default=None)
    content_type: Mapped[str] = mapped_column(String(64))
    characters: Mapped[int] = mapped_column()
    chunk_count: Mapped[int] = mapped_column()
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class KnowledgeChunk(Base):
    __tablename__ = "knowledge_chunks"
    __table_args__ = (
        Index(
            "ix_knowledge_chunks_organization_id_document_id_position",
            "organization_id",
            "document_id",
            "position",
        ),
        # PostgreSQL filters a search's matches to the knowledge base with this.
        Index(
            "ix_knowledge_chunks_organization_id_knowledge_base_id",
            "organization_id",
            "knowledge_base_id",
        ),
    )

    #: An integer key: on SQLite it is the rowid the FTS5 tables point at.
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    organization_id: Mapped[int] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    knowledge_base_id: Mapped[int] = mapped_column(
        ForeignKey("knowledge_bases.id", ondelete="CASCADE")
    )
    document_id: Mapped[int] = mapped_column(
        ForeignKey("knowledge_documents.id", ondelete="CASCADE")
    )
    position: Mapped[int] = mapped_column()
    #: The document's title and the headings above the chunk (``Returns › Shoes``).
    title: Mapped[str] = mapped_column(Text)
    text: Mapped[str] = mapped_column(Text)
    search_config: Mapped[str] = mapped_column(SearchConfig)
