"""Splitting a document into chunks: pure, so its rules are tested without a database.

A document arrives as sections (the headings above some text). Each section's text is cut
into sentences, and sentences are packed into chunks of about ``TARGET`` characters, never
across a heading: a chunk then speaks of one thing, and its title path says which. A sentence
longer than ``LIMIT`` (a table flattened into one line, 20 MB without a full stop) is cut at
the last space before the limit, or at the limit when there is none, so every chunk stays
bounded whatever the input.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

#: The size a chunk is filled to (characters), and the most it may hold.
TARGET = 1000
LIMIT = 1200
#: Between parts of a title path.
SEPARATOR = " › "
MAX_TITLE = 500

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n\s*\n")
_SPACE = re.compile(r"\s+")
_MARKDOWN_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
# Characters a database's text column refuses (NUL, lone surrogates a PDF may hold) or a
# reader never wants (other controls).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


@dataclass(frozen=True)
class Section:
    #: The headings above the text, outermost first.
    headings: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class Chunk:
    title: str
    text: str


def clean(text: str) -> str:
    return _CONTROL.sub(" ", text)


def markdown_sections(text: str) -> list[Section]:
    """ATX headings (``#`` … ``######``) open sections; a heading's level decides which
    headings stay above it. Text in fenced code blocks is never a heading."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    lines: list[str] = []
    fenced = False

    def close() -> None:
        if lines:
            sections.append(Section(tuple(h for _, h in path), "\n".join(lines)))
            lines.clear()

    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        heading = None if fenced else _MARKDOWN_HEADING.match(line)
        if heading is None:
            lines.append(line)
            continue
        close()
        level = len(heading.group(1))
        path = [(lvl, h) for lvl, h in path if lvl < level]
        path.append((level, heading.group(2).strip()))
    close()
    return sections


def sentences(text: str) -> Iterator[str]:
    """Sentences and paragraphs of ``text``, whitespace folded; none longer than LIMIT."""
    start = 0
    for boundary in _SENTENCE_END.finditer(text):
        yield from _bounded(text[start : boundary.start()])
        start = boundary.end()
    yield from _bounded(text[start:])


def _bounded(piece: str) -> Iterator[str]:
    folded = _SPACE.sub(" ", piece).strip()
    position, end = 0, len(folded)
    while end - position > LIMIT:
        cut = folded.rfind(" ", position, position + LIMIT)
        cut = cut if cut > position + LIMIT // 2 else position + LIMIT
        yield folded[position:cut].strip()
        position = cut + 1 if folded[cut : cut + 1] == " " else cut
    if position < end:
        yield folded[position:end]


def title_path(document_title: str, headings: Sequence[str]) -> str:
    parts = [document_title] if document_title else []
    for heading in headings:
        heading = _SPACE.sub(" ", heading).strip()
        if heading and (not parts or heading.casefold() != parts[-1].casefold()):
            parts.append(heading)
    return SEPARATOR.join(parts)[:MAX_TITLE]


def chunk_sections(document_title: str, sections: Iterable[Section]) -> list[Chunk]:
    chunks: list[Chunk] = []
    for section in sections:
        title = title_path(document_title, section.headings)
        current: list[str] = []
        size = 0
        for sentence in sentences(clean(section.text)):
            if current and size + 1 + len(sentence) > TARGET:
                chunks.append(Chunk(title, " ".join(current)))
                current, size = [], 0
            current.append(sentence)
            size += len(sentence) + (1 if size else 0)
        if current:
            chunks.append(Chunk(title, " ".join(current)))
    return chunks
