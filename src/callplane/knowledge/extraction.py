"""From an uploaded body to a title and sections (``chunking.Section``), per content type.

- ``text/plain``: one section; ``text/markdown``: sections at its headings.
- ``text/html``: the standard library's parser; ``script``, ``style``, ``template`` and the
  like are dropped with everything in them, ``h1``–``h6`` open sections, ``<title>`` (else the
  first heading) names the document.
- ``application/pdf``: pypdf (BSD licensed, pure Python: nothing to compile or download). A
  PDF that is encrypted, that holds no text (a scan), or that asks for more work than the
  bounds below (a "zip bomb": a few kilobytes that inflate to gigabytes) is refused with a 422
  saying which.

Bodies are text in their declared ``charset`` (UTF-8 when none is given).
"""

from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass
from html.parser import HTMLParser

from callplane.errors import InvalidInput
from callplane.knowledge.chunking import Section, markdown_sections

log = logging.getLogger("callplane.knowledge")

TEXT_TYPES = ("text/plain", "text/markdown", "text/html")
ACCEPTED = "text/plain, text/markdown, text/html, application/pdf or application/json"
#: Bounds on a PDF: the text kept, the pages read, and what any one stream may inflate to.
PDF_MAX_CHARACTERS = 20_000_000
PDF_MAX_PAGES = 5_000
PDF_MAX_STREAM_BYTES = 25_000_000


@dataclass(frozen=True)
class Extracted:
    #: The title the document itself gives (None: it gives none).
    title: str | None
    sections: list[Section]


def _refuse(message: str, type_: str = "value_error") -> InvalidInput:
    return InvalidInput(message, loc=("body",), type_=type_)


def decode(body: bytes, charset: str | None) -> str:
    try:
        return body.decode(charset or "utf-8")
    except LookupError:
        raise _refuse(
            f"unknown charset {charset[:40]!r}" if charset else "unknown charset"
        ) from None
    except UnicodeDecodeError:
        raise _refuse(
            f"the body is not valid {charset or 'UTF-8'} text (declare its charset)"
        ) from None


def plain(text: str) -> Extracted:
    return Extracted(None, [Section((), text)])


def markdown(text: str) -> Extracted:
    sections = markdown_sections(text)
    first = next((s.headings[0] for s in sections if s.headings), None)
    return Extracted(first, sections)


#: Elements whose content is never text a reader sees.
_HIDDEN = frozenset(
    {"script", "style", "template", "noscript", "svg", "math", "iframe", "object", "head"}
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCKS = frozenset(
    {
        "p",
        "div",
        "br",
        "li",
        "tr",
        "td",
        "th",
        "section",
        "article",
        "table",
        "ul",
        "ol",
        "blockquote",
        "pre",
        "dd",
        "dt",
        "header",
        "footer",
        "main",
        "nav",
        "aside",
        "hr",
    }
)


class _Html(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[Section] = []
        self.path: list[tuple[int, str]] = []
        self.text: list[str] = []
        self.heading: list[str] | None = None
        self.level = 0
        self.hidden: list[str] = []
        self.in_title = False
        self.title: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.in_title = True
        if tag in _HIDDEN:
            self.hidden.append(tag)
        elif not self.hidden and tag in _HEADINGS:
            self._close()
            self.heading, self.level = [], _HEADINGS[tag]
        elif tag in _BLOCKS:
            self.text.append("\n\n" if tag in ("p", "div", "section", "article") else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if self.hidden and tag == self.hidden[-1]:
            self.hidden.pop()
        elif tag in _HEADINGS and self.heading is not None:
            name = " ".join("".join(self.heading).split())
            self.path = [(lvl, h) for lvl, h in self.path if lvl < self.level]
            if name:
                self.path.append((self.level, name))
            self.heading = None

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        if self.hidden:
            return
        (self.heading if self.heading is not None else self.text).append(data)

    def _close(self) -> None:
        text = "".join(self.text)
        if text.strip():
            self.sections.append(Section(tuple(h for _, h in self.path), text))
        self.text = []

    def result(self) -> Extracted:
        self._close()
        title = " ".join("".join(self.title).split()) or None
        if title is None:
            title = next((s.headings[0] for s in self.sections if s.headings), None)
        return Extracted(title, self.sections)


def html(text: str) -> Extracted:
    parser = _Html()
    parser.feed(text)
    parser.close()
    return parser.result()


def pdf(body: bytes) -> Extracted:
    """The PDF's text, page by page (blocking: run it in a thread)."""
    import pypdf
    from pypdf.errors import PyPdfError

    limits = {
        name: PDF_MAX_STREAM_BYTES
        for name in (
            "maximum_declared_stream_length",
            "array_based_stream_maximum_output_length",
            "jbig2_maximum_output_length",
            "lzw_maximum_output_length",
            "run_length_maximum_output_length",
            "zlib_maximum_output_length",
            "image_maximum_buffer_size",
            "stream_decoding_work_maximum_length",
            "xfa_decoding_work_maximum_length",
        )
    }
    try:
        with pypdf.apply_configuration(pypdf.get_configuration().with_overwrites(**limits)):
            reader = pypdf.PdfReader(io.BytesIO(body))
            if reader.is_encrypted:
                raise _refuse(
                    "the PDF is encrypted: upload a copy without a password", "pdf_encrypted"
                )
            if len(reader.pages) > PDF_MAX_PAGES:
                raise _refuse(f"the PDF has more than {PDF_MAX_PAGES} pages", "pdf_too_large")
            pages: list[str] = []
            size = 0
            for page in reader.pages:
                text = page.extract_text() or ""
                size += len(text)
                if size > PDF_MAX_CHARACTERS:
                    raise _refuse(
                        f"the PDF holds more than {PDF_MAX_CHARACTERS} characters of text",
                        "pdf_too_large",
                    )
                pages.append(text)
            title = _pdf_title(reader)
    except InvalidInput:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, IndexError, RecursionError) as exc:
        # pypdf's limits raise LimitReachedError (a PyPdfError); a broken file anything else.
        log.info("a PDF could not be read: %s", type(exc).__name__)
        raise _refuse(
            "the PDF could not be read (damaged, or it inflates beyond what is accepted)",
            "pdf_unreadable",
        ) from None
    text = "\n\n".join(pages)
    if not re.search(r"\w", text):
        raise _refuse(
            "the PDF has no text to index (a scanned image?): run it through OCR first, or "
            "upload its text",
            "pdf_no_text",
        )
    return Extracted(title, [Section((), text)])


def _pdf_title(reader: object) -> str | None:
    try:
        metadata = reader.metadata  # type: ignore[attr-defined]
        title = metadata.title if metadata is not None else None
    except Exception:  # metadata is optional and often broken; the document is not
        return None
    return " ".join(str(title).split()) or None if title else None
