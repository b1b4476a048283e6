"""Knowledge bases: documents an agent can look things up in, and the search that shows what
it would find."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from callplane_client._resources import List, _drop_none, _many, _one, _page, _Resource, _segment
from callplane_client._transport import Request
from callplane_client.models import (
    KnowledgeBase,
    KnowledgeDocument,
    Page,
    Result,
    SearchResult,
)


def _base(id: str) -> str:  # noqa: A002
    return f"/v1/knowledge_bases/{_segment(id)}"


class KnowledgeBases(_Resource):
    def create(self, name: str, language: str | None = None) -> KnowledgeBase:
        """``language``: BCP 47 (``en`` when not given); it decides how words are stemmed."""
        body = _drop_none({"name": name, "language": language})
        return self._send(  # type: ignore[no-any-return]
            Request("POST", "/v1/knowledge_bases", _one(KnowledgeBase, "knowledge_base"), json=body)
        )

    def list(self, page: int = 1, page_size: int = 20) -> Page[KnowledgeBase]:
        params = {"page": page, "page_size": page_size}
        return self._send(  # type: ignore[no-any-return]
            Request("GET", "/v1/knowledge_bases", _page(KnowledgeBase, "knowledge_bases"), params)
        )

    def iter(self, page_size: int = 100) -> Iterator[KnowledgeBase]:
        return self._walk(lambda page: self.list(page=page, page_size=page_size))

    def get(self, id: str) -> KnowledgeBase:  # noqa: A002
        return self._send(  # type: ignore[no-any-return]
            Request("GET", _base(id), _one(KnowledgeBase, "knowledge_base"))
        )

    def delete(self, id: str) -> Result:  # noqa: A002
        return self._send(Request("DELETE", _base(id), _one(Result)))  # type: ignore[no-any-return]

    def add_document(
        self,
        id: str,  # noqa: A002
        content: bytes | str,
        content_type: str,
        *,
        title: str | None = None,
        url: str | None = None,
    ) -> KnowledgeDocument:
        """A document as itself: ``content_type`` ``text/plain``, ``text/markdown``,
        ``text/html`` or ``application/pdf``; at most 20 MB."""
        body = content.encode() if isinstance(content, str) else content
        params = _drop_none({"title": title, "url": url})
        return self._send(  # type: ignore[no-any-return]
            Request(
                "POST",
                f"{_base(id)}/documents",
                _one(KnowledgeDocument, "document"),
                params,
                content=body,
                headers={"Content-Type": content_type},
            )
        )

    def add_text(
        self,
        id: str,  # noqa: A002
        text: str,
        *,
        title: str | None = None,
        url: str | None = None,
    ) -> KnowledgeDocument:
        """A document sent as JSON ``{"title", "text", "url"}``."""
        body = _drop_none({"title": title, "text": text, "url": url})
        return self._send(  # type: ignore[no-any-return]
            Request(
                "POST", f"{_base(id)}/documents", _one(KnowledgeDocument, "document"), json=body
            )
        )

    def documents(
        self,
        id: str,  # noqa: A002
        page: int = 1,
        page_size: int = 20,
    ) -> Page[KnowledgeDocument]:
        params = {"page": page, "page_size": page_size}
        return self._send(  # type: ignore[no-any-return]
            Request("GET", f"{_base(id)}/documents", _page(KnowledgeDocument, "documents"), params)
        )

    def get_document(self, id: str, document_id: str) -> KnowledgeDocument:  # noqa: A002
        path = f"{_base(id)}/documents/{_segment(document_id)}"
        return self._send(Request("GET", path, _one(KnowledgeDocument, "document")))  # type: ignore[no-any-return]

    def delete_document(self, id: str, document_id: str) -> Result:  # noqa: A002
        path = f"{_base(id)}/documents/{_segment(document_id)}"
        return self._send(Request("DELETE", path, _one(Result)))  # type: ignore[no-any-return]

    def search(
        self,
        id: str,  # noqa: A002
        query: str,
        top_k: int | None = None,
    ) -> List[SearchResult]:
        """The chunks that best match ``query`` (words, never a query language), best first:
        what the agent would find."""
        body: dict[str, Any] = _drop_none({"query": query, "top_k": top_k})
        return self._send(  # type: ignore[no-any-return]
            Request("POST", f"{_base(id)}/search", _many(SearchResult, "results"), json=body)
        )
