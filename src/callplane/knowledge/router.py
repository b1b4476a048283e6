"""Knowledge bases, their documents and search (docs/knowledge.md). Every error in the agents'
(STATUS) shape."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import Header, Query
from starlette.requests import Request
from starlette.responses import Response

from callplane.http.body import read_bounded
from callplane.http.deps import CurrentTenant, SessionDep
from callplane.http.families import STATUS
from callplane.http.responses import json_response
from callplane.http.routing import family_router, streamed_body
from callplane.kit.pagination import total_pages
from callplane.kit.scopes import AGENTS, needs_scope
from callplane.knowledge import extraction, ingest, service
from callplane.knowledge.schemas import (
    Deleted,
    DocumentEnvelope,
    DocumentJson,
    DocumentList,
    KnowledgeBaseCreate,
    KnowledgeBaseEnvelope,
    KnowledgeBaseList,
    SearchRequest,
    SearchResults,
)

router = family_router(STATUS, scopes=AGENTS, tags=["knowledge"])

Page = Annotated[int, Query(ge=1, le=1_000_000)]
PageSize = Annotated[int, Query(ge=1, le=100)]
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"description": "Knowledge base not found"}}

_BINARY = {"schema": {"type": "string", "format": "binary"}}
_DOCUMENT_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "The document: its text (plain, Markdown, HTML), a PDF, or JSON",
        "content": {
            "application/json": {"schema": DocumentJson.model_json_schema()},
            # The document's bytes, as generated clients send a file.
            **{media: _BINARY for media in (*extraction.TEXT_TYPES, "application/pdf")},
        },
    }
}


@router.post(
    "/knowledge_bases",
    response_model=KnowledgeBaseEnvelope,
    status_code=201,
    summary="Create a knowledge base",
)
async def create_knowledge_base(
    body: KnowledgeBaseCreate, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """A knowledge base whose documents are stemmed in `language` (BCP 47, default `en`)."""
    base = await service.create_knowledge_base(
        session, tenant.organization_id, name=body.name, language=body.language
    )
    return json_response({"knowledge_base": service.knowledge_base_wire(base, 0)}, 201)


@router.get("/knowledge_bases", response_model=KnowledgeBaseList, summary="List knowledge bases")
async def list_knowledge_bases(
    session: SessionDep, tenant: CurrentTenant, page: Page = 1, page_size: PageSize = 20
) -> Response:
    """The organization's knowledge bases, by name."""
    bases, total = await service.list_knowledge_bases(
        session, tenant.organization_id, page=page, page_size=page_size
    )
    return json_response(
        {
            "knowledge_bases": bases,
            "total_count": total,
            "page": page,
            "page_size": page_size,
            "total_pages": total_pages(total, page_size),
        }
    )


@router.get(
    "/knowledge_bases/{uuid}",
    response_model=KnowledgeBaseEnvelope,
    summary="Get a knowledge base",
    responses=NOT_FOUND,
)
async def get_knowledge_base(
    uuid: uuid.UUID, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """The knowledge base, with how many documents it holds."""
    base = await service.get_knowledge_base(session, tenant.organization_id, uuid)
    counts = await service.document_counts(session, tenant.organization_id, [base.id])
    return json_response(
        {"knowledge_base": service.knowledge_base_wire(base, counts.get(base.id, 0))}
    )


@router.delete(
    "/knowledge_bases/{uuid}",
    response_model=Deleted,
    summary="Delete a knowledge base and its documents",
    responses=NOT_FOUND,
)
async def delete_knowledge_base(
    uuid: uuid.UUID, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """The knowledge base, its documents and their chunks; searches find nothing of it from
    then on. An agent that still names it finds nothing."""
    await service.delete_knowledge_base(session, tenant.organization_id, uuid)
    return json_response({"success": True})


@router.post(
    "/knowledge_bases/{uuid}/documents",
    response_model=DocumentEnvelope,
    status_code=201,
    summary="Add a document (text, Markdown, HTML, PDF or JSON)",
    openapi_extra=_DOCUMENT_BODY,
    responses={**NOT_FOUND, 413: {"description": "Document larger than 20 MB"}},
)
@streamed_body
async def add_document(
    uuid: uuid.UUID,
    request: Request,
    session: SessionDep,
    tenant: CurrentTenant,
    content_type: Annotated[str | None, Header(description=extraction.ACCEPTED)] = None,
    title: Annotated[
        str | None, Query(min_length=1, max_length=255, description="(not JSON) the title")
    ] = None,
    url: Annotated[
        str | None, Query(min_length=1, max_length=2048, description="(not JSON) its source")
    ] = None,
) -> Response:
    """The document is split at its headings and sentences into chunks of about 1,000
    characters, each carrying its title path, and indexed at once. The body is the document
    itself (`text/plain`, `text/markdown`, `text/html`, `application/pdf`; `title` and `url`
    in the query) or JSON `{"title", "text", "url"}`; at most 20 MB."""
    ingest.media_type(content_type)  # a wrong type is refused before the body is read
    body = await read_bounded(request, ingest.MAX_DOCUMENT_BYTES)
    # The body is read and parsed before the database is touched: no lock is held meanwhile.
    prepared = await ingest.prepare(body, content_type, title=title, url=url)
    base = await service.get_knowledge_base(session, tenant.organization_id, uuid)
    document = await service.add_document(
        session,
        tenant.organization_id,
        base,
        prepared.extracted,
        title=prepared.title,
        url=prepared.url,
        content_type=prepared.media,
    )
    return json_response({"document": service.document_wire(document, base)}, 201)


@router.get(
    "/knowledge_bases/{uuid}/documents",
    response_model=DocumentList,
    summary="List a knowledge base's documents, newest first",
    responses=NOT_FOUND,
)
async def list_documents(
    uuid: uuid.UUID,
    session: SessionDep,
    tenant: CurrentTenant,
    page: Page = 1,
    page_size: PageSize = 20,
) -> Response:
    """The knowledge base's documents (without their text), newest first."""
    base = await service.get_knowledge_base(session, tenant.organization_id, uuid)
    documents, total = await service.list_documents(
        session, tenant.organization_id, base, page=page, page_size=page_size
    )
    return json_response(
        {
            "documents": documents,
            "total_count": total,
            "page": page,
            "page_size": page_size,
            "total_pages": total_pages(total, page_size),
        }
    )


@router.get(
    "/knowledge_bases/{uuid}/documents/{document_id}",
    response_model=DocumentEnvelope,
    summary="Get a document",
    responses={404: {"description": "Knowledge base or document not found"}},
)
async def get_document(
    uuid: uuid.UUID, document_id: uuid.UUID, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """One document: its title, source, type, size and how many chunks it was split into."""
    base = await service.get_knowledge_base(session, tenant.organization_id, uuid)
    document = await service.get_document(session, tenant.organization_id, base, document_id)
    return json_response({"document": service.document_wire(document, base)})


@router.delete(
    "/knowledge_bases/{uuid}/documents/{document_id}",
    response_model=Deleted,
    summary="Delete a document (gone from search at once)",
    responses={404: {"description": "Knowledge base or document not found"}},
)
async def delete_document(
    uuid: uuid.UUID, document_id: uuid.UUID, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """The document and its chunks, in one transaction: no search finds them afterwards."""
    base = await service.get_knowledge_base(session, tenant.organization_id, uuid)
    await service.delete_document(session, tenant.organization_id, base, document_id)
    return json_response({"success": True})


@router.post(
    "/knowledge_bases/{uuid}/search",
    response_model=SearchResults,
    summary="Search a knowledge base: what the agent would find",
    responses=NOT_FOUND,
)
@needs_scope("agents:read")  # a search, sent as POST for its body
async def search_knowledge_base(
    uuid: uuid.UUID, body: SearchRequest, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """The `top_k` (at most 20) chunks that best match `query`, best first, with their scores
    (BM25 on SQLite, `ts_rank_cd` on PostgreSQL: higher is better; compare them within one
    search only). The query is words, never a query language."""
    base = await service.get_knowledge_base(session, tenant.organization_id, uuid)
    hits = await service.search(session, tenant.organization_id, base, body.query, body.top_k)
    return json_response({"results": [service.hit_wire(hit) for hit in hits]})
