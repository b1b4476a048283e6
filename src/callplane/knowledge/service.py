"""Knowledge bases, documents and search: the rules and queries behind the routes, the agent's
``knowledge_search`` tool and ``knowledge.auto`` (docs/knowledge.md). Services flush, never
commit."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import func, insert
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.errors import NotFound
from callplane.kit.pagination import offset
from callplane.kit.tenancy import delete_owned, select_owned
from callplane.knowledge.chunking import chunk_sections
from callplane.knowledge.extraction import Extracted
from callplane.knowledge.search import Hit, search_chunks, search_config
from callplane.models.base import utcnow
from callplane.models.knowledge import KnowledgeBase, KnowledgeChunk, KnowledgeDocument

UNTITLED = "Untitled document"
#: Chunks written per INSERT (a 20 MB document makes ~20,000).
_BATCH = 1_000


def knowledge_base_wire(base: KnowledgeBase, document_count: int) -> dict[str, Any]:
    return {
        "id": str(base.uuid),
        "name": base.name,
        "language": base.language,
        "document_count": document_count,
        "created_at": base.created_at,
        "updated_at": base.updated_at,
    }


def document_wire(document: KnowledgeDocument, base: KnowledgeBase) -> dict[str, Any]:
    return {
        "id": str(document.uuid),
        "knowledge_base_id": str(base.uuid),
        "title": document.title,
        "url": document.url,
        "content_type": document.content_type,
        "characters": document.characters,
        "chunk_count": document.chunk_count,
        "created_at": document.created_at,
    }


async def create_knowledge_base(
    session: AsyncSession, organization_id: int, *, name: str, language: str
) -> KnowledgeBase:
    now = utcnow()
    base = KnowledgeBase(
        organization_id=organization_id,
        uuid=uuid.uuid4(),
        name=name,
        language=language,
        search_config=search_config(language),
        created_at=now,
        updated_at=now,
    )
    session.add(base)
    await session.flush()
    return base


async def get_knowledge_base(
    session: AsyncSession, organization_id: int, base_uuid: uuid.UUID
) -> KnowledgeBase:
    base: KnowledgeBase | None = await session.scalar(
        select_owned(KnowledgeBase, organization_id).where(KnowledgeBase.uuid == base_uuid)
    )
    if base is None:
        raise NotFound("Knowledge base not found")
    return base


async def document_counts(
    session: AsyncSession, organization_id: int, base_ids: list[int]
) -> dict[int, int]:
    if not base_ids:
        return {}
    rows = await session.execute(
        select_owned(
            KnowledgeDocument,
            organization_id,
            KnowledgeDocument.knowledge_base_id,
            func.count(),
        )
        .where(KnowledgeDocument.knowledge_base_id.in_(base_ids))
        .group_by(KnowledgeDocument.knowledge_base_id)
    )
    return {int(base_id): int(n) for base_id, n in rows.all()}


async def list_knowledge_bases(
    session: AsyncSession, organization_id: int, *, page: int, page_size: int
) -> tuple[list[dict[str, Any]], int]:
    total = int(
        await session.scalar(select_owned(KnowledgeBase, organization_id, func.count())) or 0
    )
    bases = (
        await session.scalars(
            select_owned(KnowledgeBase, organization_id)
            .order_by(KnowledgeBase.name, KnowledgeBase.id)
            .limit(page_size)
            .offset(offset(page, page_size))
        )
    ).all()
    counts = await document_counts(session, organization_id, [b.id for b in bases])
    return [knowledge_base_wire(b, counts.get(b.id, 0)) for b in bases], total


async def _lock_for_writing(session: AsyncSession, base: KnowledgeBase) -> None:
    """One writer of a knowledge base's chunks at a time: on PostgreSQL their triggers count
    words per knowledge base (migration 0025), and two uploads counting the same words in
    batches would each wait for the other. A no-op on SQLite, which has one writer anyway."""
    await session.execute(
        select_owned(KnowledgeBase, base.organization_id, KnowledgeBase.id)
        .where(KnowledgeBase.id == base.id)
        .with_for_update(key_share=True)
    )


async def delete_knowledge_base(
    session: AsyncSession, organization_id: int, base_uuid: uuid.UUID
) -> None:
    base = await get_knowledge_base(session, organization_id, base_uuid)
    await _lock_for_writing(session, base)
    # Chunks first, by statement: on SQLite their triggers take them out of the index.
    await session.execute(
        delete_owned(KnowledgeChunk, organization_id).where(
            KnowledgeChunk.knowledge_base_id == base.id
        )
    )
    await session.execute(
        delete_owned(KnowledgeDocument, organization_id).where(
            KnowledgeDocument.knowledge_base_id == base.id
        )
    )
    await session.execute(
        delete_owned(KnowledgeBase, organization_id).where(KnowledgeBase.id == base.id)
    )


async def add_document(
    session: AsyncSession,
    organization_id: int,
    base: KnowledgeBase,
    extracted: Extracted,
    *,
    title: str | None,
    url: str | None,
    content_type: str,
) -> KnowledgeDocument:
    name = " ".join((title or extracted.title or UNTITLED).split())[:255] or UNTITLED
    chunks = chunk_sections(name, extracted.sections)
    await _lock_for_writing(session, base)
    document = KnowledgeDocument(
        organization_id=organization_id,
        uuid=uuid.uuid4(),
        knowledge_base_id=base.id,
        title=name,
        url=url,
        content_type=content_type,
        characters=sum(len(c.text) for c in chunks),
        chunk_count=len(chunks),
        created_at=utcnow(),
    )
    session.add(document)
    await session.flush()
    rows = [
        {
            "organization_id": organization_id,
            "knowledge_base_id": base.id,
            "document_id": document.id,
            "position": position,
            "title": chunk.title,
            "text": chunk.text,
            "search_config": base.search_config,
        }
        for position, chunk in enumerate(chunks)
    ]
    for start in range(0, len(rows), _BATCH):
        await session.execute(insert(KnowledgeChunk), rows[start : start + _BATCH])
    return document


async def get_document(
    session: AsyncSession, organization_id: int, base: KnowledgeBase, document_uuid: uuid.UUID
) -> KnowledgeDocument:
    document: KnowledgeDocument | None = await session.scalar(
        select_owned(KnowledgeDocument, organization_id).where(
            KnowledgeDocument.knowledge_base_id == base.id,
            KnowledgeDocument.uuid == document_uuid,
        )
    )
    if document is None:
        raise NotFound("Document not found")
    return document


async def list_documents(
    session: AsyncSession, organization_id: int, base: KnowledgeBase, *, page: int, page_size: int
) -> tuple[list[dict[str, Any]], int]:
    owned = select_owned(KnowledgeDocument, organization_id).where(
        KnowledgeDocument.knowledge_base_id == base.id
    )
    total = int(
        await session.scalar(
            select_owned(KnowledgeDocument, organization_id, func.count()).where(
                KnowledgeDocument.knowledge_base_id == base.id
            )
        )
        or 0
    )
    documents = (
        await session.scalars(
            owned.order_by(KnowledgeDocument.id.desc())
            .limit(page_size)
            .offset(offset(page, page_size))
        )
    ).all()
    return [document_wire(d, base) for d in documents], total


async def delete_document(
    session: AsyncSession, organization_id: int, base: KnowledgeBase, document_uuid: uuid.UUID
) -> None:
    document = await get_document(session, organization_id, base, document_uuid)
    await _lock_for_writing(session, base)
    await session.execute(
        delete_owned(KnowledgeChunk, organization_id).where(
            KnowledgeChunk.document_id == document.id
        )
    )
    await session.execute(
        delete_owned(KnowledgeDocument, organization_id).where(KnowledgeDocument.id == document.id)
    )


async def search(
    session: AsyncSession, organization_id: int, base: KnowledgeBase, query: str, top_k: int
) -> list[Hit]:
    return await search_chunks(session, organization_id, base.id, base.search_config, query, top_k)


def hit_wire(hit: Hit) -> dict[str, Any]:
    return {
        "document_id": str(hit.document_uuid),
        "title": hit.title,
        "text": hit.text,
        "score": hit.score,
    }
