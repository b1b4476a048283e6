"""Cut a streamed reply into sentences, so the first one can be spoken before the rest arrives.

A sentence ends at ``.``, ``!``, ``?`` or ``…`` (closing quotes/brackets included) followed by
whitespace, or at a line break. The whitespace must have arrived: "3." may still become "3.5".
Common abbreviations ("Dr.", "e.g.") do not end a sentence.

A reply's opening clause ("Of course,") can go ahead of its sentence (``opening_clause``): the
caller waits for the first words, and a model streams the rest of the sentence for a few hundred
milliseconds more.
"""

from __future__ import annotations

import re

_ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "sr",
        "jr",
        "st",
        "mt",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "approx",
        "no",
        "inc",
        "ltd",
        "co",
        "dept",
    ]
)
_BOUNDARY = re.compile(r"""([.!?…]+["')\]]*)(\s+)|(\n+)""")
#: A clause break after two words or more: followed by the next word ("Of course, I"), or
#: ending the text so far unless a digit precedes it ("It is 1," may become "1,000").
_CLAUSE = re.compile(r"\s*(\S+(?:\s+\S+)+?[,;:])(?:\s+(?=\S)|(?<!\d[,;:])\s*$)")


def opening_clause(text: str) -> tuple[str, str] | None:
    """``text`` cut after its first clause break ("Of course," and the rest, as it is), if it
    has one two words or more in."""
    match = _CLAUSE.match(text)
    return None if match is None else (match.group(1), text[match.end() :])


class SentenceSplitter:
    def __init__(self, *, opening_clause: bool = False) -> None:
        self._buffer = ""
        #: Whether the first sentence's opening clause may still be cut off ahead of it.
        self._clause_ahead = opening_clause

    def feed(self, text: str) -> list[str]:
        """Add streamed text; return the sentences it completed (and, first, the opening
        clause of a sentence still streaming, when asked for)."""
        self._buffer += text
        sentences: list[str] = []
        start = 0
        for match in _BOUNDARY.finditer(self._buffer):
            end = match.end(1) if match.group(1) else match.start(3)
            candidate = self._buffer[start:end].strip()
            if match.group(1) and _ends_with_abbreviation(candidate):
                continue
            if candidate:
                sentences.append(candidate)
            start = match.end()
        self._buffer = self._buffer[start:]
        if self._clause_ahead:
            clause = None if sentences else opening_clause(self._buffer)
            if clause is not None:
                sentences.append(clause[0])
                self._buffer = clause[1]
            if sentences:
                self._clause_ahead = False
        return sentences

    def flush(self) -> str | None:
        """The unfinished rest, once the stream has ended."""
        rest, self._buffer = self._buffer.strip(), ""
        return rest or None


def _ends_with_abbreviation(sentence: str) -> bool:
    if not sentence.endswith("."):
        return False
    words = sentence.rstrip(".").rsplit(None, 1)
    return bool(words) and words[-1].lower() in _ABBREVIATIONS
