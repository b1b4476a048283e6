"""Knowledge: knowledge bases (create, delete), their documents (add a file -- text, Markdown,
HTML, PDF, JSON -- or paste text; delete) and a search box showing exactly what the agent would
find, with scores. The same services as ``/v1/knowledge_bases``: a file goes through the same
reading (``knowledge.ingest``) as a document sent to the API, with the same errors."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import Query
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from callplane.dashboard.forms import fields, takes_files, upload
from callplane.dashboard.rendering import render
from callplane.dashboard.routing import CurrentPerson, dashboard_router
from callplane.errors import InvalidInput
from callplane.http.deps import SessionDep
from callplane.kit.pagination import total_pages
from callplane.knowledge import extraction, ingest, service
from callplane.knowledge.schemas import KnowledgeBaseCreate
from callplane.models.knowledge import KnowledgeBase

router = dashboard_router()
PAGE_SIZE = 25
#: What the form's format choice reads a pasted document as.
FORMATS = {
    "text/markdown": extraction.markdown,
    "text/plain": extraction.plain,
    "text/html": extraction.html,
}
SEARCH_TOP_K = 5


def _messages(exc: ValidationError) -> list[str]:
    return [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]


async def _list(
    request: Request, session: SessionDep, person: CurrentPerson, status: int = 200, **extra: Any
) -> Response:
    bases, _ = await service.list_knowledge_bases(
        session, person.organization_id, page=1, page_size=100
    )
    extra.setdefault("errors", [])
    extra.setdefault("values", {})
    return render(
        request, "knowledge_bases.html", status, section="knowledge", bases=bases, **extra
    )


@router.get("/knowledge")
async def knowledge_page(request: Request, session: SessionDep, person: CurrentPerson) -> Response:
    return await _list(request, session, person)


@router.post("/knowledge")
async def create(request: Request, session: SessionDep, person: CurrentPerson) -> Response:
    values = await fields(request)
    try:
        body = KnowledgeBaseCreate.model_validate(
            {"name": values.get("name", "").strip(), "language": values.get("language") or "en"}
        )
    except ValidationError as exc:
        return await _list(request, session, person, 422, errors=_messages(exc), values=values)
    base = await service.create_knowledge_base(
        session, person.organization_id, name=body.name, language=body.language
    )
    return RedirectResponse(f"{request.scope.get('root_path', '')}/knowledge/{base.uuid}", 303)


async def _base_page(
    request: Request,
    session: SessionDep,
    person: CurrentPerson,
    base: KnowledgeBase,
    *,
    status: int = 200,
    page: int = 1,
    query: str | None = None,
    **extra: Any,
) -> Response:
    documents, total = await service.list_documents(
        session, person.organization_id, base, page=page, page_size=PAGE_SIZE
    )
    counts = await service.document_counts(session, person.organization_id, [base.id])
    results = None
    if query:
        hits = await service.search(session, person.organization_id, base, query, SEARCH_TOP_K)
        results = [service.hit_wire(hit) for hit in hits]
    extra.setdefault("errors", [])
    extra.setdefault("values", {})
    extra.setdefault("notice", None)
    return render(
        request,
        "knowledge_base.html",
        status,
        section="knowledge",
        base_=service.knowledge_base_wire(base, counts.get(base.id, 0)),
        documents=documents,
        page=page,
        pages=total_pages(total, PAGE_SIZE),
        params={"q": query} if query else {},
        query=query or "",
        results=results,
        formats=list(FORMATS),
        **extra,
    )


@router.get("/knowledge/{base_id}")
async def base_page(
    request: Request,
    base_id: uuid.UUID,
    session: SessionDep,
    person: CurrentPerson,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    q: Annotated[str | None, Query(max_length=1000)] = None,
    added: str | None = None,
    deleted: str | None = None,
) -> Response:
    base = await service.get_knowledge_base(session, person.organization_id, base_id)
    notice = "Document added." if added else "Document deleted." if deleted else None
    return await _base_page(
        request, session, person, base, page=page, query=(q or "").strip(), notice=notice
    )


@router.post("/knowledge/{base_id}/documents")
@takes_files(ingest.MAX_DOCUMENT_BYTES)
async def add_document(
    request: Request, base_id: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    values = await fields(request)
    file = await upload(request, "file")
    base = await service.get_knowledge_base(session, person.organization_id, base_id)
    title = " ".join(values.get("title", "").split()) or None
    url = values.get("url", "").strip() or None
    text = values.get("text", "")
    try:
        if file is not None:
            declared = ingest.file_type(file.filename or "", file.content_type)
            # Bounded already: the form's body stopped at the page's limit as it was read.
            prepared = await ingest.prepare(await file.read(), declared, title=title, url=url)
            stem = (file.filename or "").rsplit("/", 1)[-1].rsplit(".", 1)[0]
            title = title or prepared.title or prepared.extracted.title or stem or None
            url = url or prepared.url
        elif text.strip():
            media = values.get("format", "")
            media = media if media in FORMATS else "text/plain"
            prepared = ingest.Prepared(FORMATS[media](text), title, url, media)
        else:
            raise InvalidInput("choose a file, or paste the document's text", loc=("body",))
    except InvalidInput as exc:
        where = "file" if file is not None else "text"
        return await _base_page(
            request,
            session,
            person,
            base,
            status=422,
            errors=[f"{where}: {exc.message}"],
            values=values,
        )
    await service.add_document(
        session,
        person.organization_id,
        base,
        prepared.extracted,
        title=title,
        url=url,
        content_type=prepared.media,
    )
    return RedirectResponse(
        f"{request.scope.get('root_path', '')}/knowledge/{base.uuid}?added=1", 303
    )


@router.post("/knowledge/{base_id}/documents/{document_id}/delete")
async def delete_document(
    request: Request,
    base_id: uuid.UUID,
    document_id: uuid.UUID,
    session: SessionDep,
    person: CurrentPerson,
) -> Response:
    base = await service.get_knowledge_base(session, person.organization_id, base_id)
    await service.delete_document(session, person.organization_id, base, document_id)
    return RedirectResponse(
        f"{request.scope.get('root_path', '')}/knowledge/{base.uuid}?deleted=1", 303
    )


@router.post("/knowledge/{base_id}/delete")
async def delete(
    request: Request, base_id: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    await service.delete_knowledge_base(session, person.organization_id, base_id)
    return RedirectResponse(f"{request.scope.get('root_path', '')}/knowledge", 303)
