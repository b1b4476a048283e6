"""Wire models of knowledge bases, documents and search (docs/knowledge.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from callplane.kit.schemas import LANGUAGE_TAG, SafeStr

#: The most results one search returns.
MAX_TOP_K = 20
#: The most characters of a document sent as JSON or text (the body limit is 20 MB).
MAX_TEXT = 20_000_000

Name = Annotated[SafeStr, StringConstraints(min_length=1, max_length=255)]
Url = Annotated[SafeStr, StringConstraints(max_length=2048)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class KnowledgeBaseCreate(_Body):
    name: Name
    language: Annotated[str, StringConstraints(pattern=LANGUAGE_TAG, max_length=64)] = "en"


class DocumentJson(_Body):
    title: Name | None = None
    text: Annotated[SafeStr, StringConstraints(min_length=1, max_length=MAX_TEXT)]
    url: Url | None = None


class SearchRequest(_Body):
    query: Annotated[SafeStr, StringConstraints(min_length=1, max_length=1_000)]
    top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K)] = 5


class KnowledgeBase(BaseModel):
    id: UUID
    name: str
    language: str
    document_count: int
    created_at: datetime
    updated_at: datetime


class KnowledgeBaseEnvelope(BaseModel):
    knowledge_base: KnowledgeBase


class KnowledgeBaseList(BaseModel):
    knowledge_bases: list[KnowledgeBase]
    total_count: int
    page: int
    page_size: int
    total_pages: int


class Document(BaseModel):
    id: UUID
    knowledge_base_id: UUID
    title: str
    url: str | None
    content_type: str
    characters: int
    chunk_count: int
    created_at: datetime


class DocumentEnvelope(BaseModel):
    document: Document


class DocumentList(BaseModel):
    documents: list[Document]
    total_count: int
    page: int
    page_size: int
    total_pages: int


class SearchResult(BaseModel):
    document_id: UUID
    title: str
    text: str
    score: float


class SearchResults(BaseModel):
    results: list[SearchResult]


class Deleted(BaseModel):
    success: bool
