"""From an uploaded body and its declared type to what ``service.add_document`` stores: the one
way in for a document, through the API (a body) or the dashboard (a file in a form).

It touches no database: a 20 MB body is read and parsed before any lock is taken.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import PurePosixPath

from pydantic import ValidationError

from callplane.errors import InvalidInput
from callplane.kit import jsonvalues
from callplane.knowledge import extraction
from callplane.knowledge.schemas import DocumentJson

#: The largest document accepted (413 beyond), whatever its type.
MAX_DOCUMENT_BYTES = 20 * 1024 * 1024
MEDIA_TYPES = (*extraction.TEXT_TYPES, "application/pdf", "application/json")
#: A file's type by its name, when what the browser declared says nothing (many send
#: ``application/octet-stream`` for ``.md``).
BY_SUFFIX = {
    ".txt": "text/plain",
    ".text": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".htm": "text/html",
    ".html": "text/html",
    ".pdf": "application/pdf",
    ".json": "application/json",
}


@dataclass(frozen=True)
class Prepared:
    extracted: extraction.Extracted
    title: str | None
    url: str | None
    media: str


def media_type(content_type: str | None) -> tuple[str, str | None]:
    """The media type and charset of a Content-Type; none at all is JSON."""
    if not content_type:
        return "application/json", None
    media, _, rest = content_type.partition(";")
    media = media.strip().lower()
    charset = None
    for parameter in rest.split(";"):
        key, _, value = parameter.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip('"') or None
    if media not in MEDIA_TYPES:
        raise InvalidInput(
            f"Content-Type must be {extraction.ACCEPTED}",
            loc=("header", "content-type"),
            type_="content_type",
        )
    return media, charset


def file_type(filename: str, declared: str | None) -> str:
    """A file's Content-Type: as declared when it is one we read, else by its name."""
    if declared and declared.split(";", 1)[0].strip().lower() in MEDIA_TYPES:
        return declared
    by_name = BY_SUFFIX.get(PurePosixPath(filename).suffix.lower())
    if by_name is None:
        raise InvalidInput(
            "the file must be text (.txt), Markdown (.md), HTML (.html), a PDF or JSON",
            loc=("body", "file"),
            type_="content_type",
        )
    return by_name


async def prepare(
    body: bytes, content_type: str | None, *, title: str | None, url: str | None
) -> Prepared:
    """The document in ``body``, or a 422 saying what is wrong with it (an empty body, a scan,
    an encrypted PDF, JSON without text...)."""
    media, charset = media_type(content_type)
    if not body.strip():
        raise InvalidInput("the document is empty", loc=("body",), type_="missing")
    if media == "application/pdf":
        return Prepared(await asyncio.to_thread(extraction.pdf, body), title, url, media)
    if media == "application/json":
        try:
            document = DocumentJson.model_validate(jsonvalues.parse(body))
        except ValidationError as exc:
            first = exc.errors(include_input=False, include_url=False)[0]
            where = "/".join(str(part) for part in first["loc"]) or "body"
            raise InvalidInput(f"{where}: {first['msg']}", loc=("body",)) from None
        # A JSON document names its own title and source.
        return Prepared(extraction.plain(document.text), document.title, document.url, media)
    text = extraction.decode(body, charset)
    if media == "text/html":
        return Prepared(await asyncio.to_thread(extraction.html, text), title, url, media)
    if media == "text/markdown":
        return Prepared(extraction.markdown(text), title, url, media)
    return Prepared(extraction.plain(text), title, url, media)
