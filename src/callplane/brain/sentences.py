"""Cut a streamed reply into sentences, so the first one can be spoken before the rest arrives.

A sentence ends at ``.``, ``!``, ``?`` or ``…`` (closing quotes/brackets included) followed by
whitespace, or at a line break. The whitespace must have arrived: "3." may still become "3.5".
Common abbreviations ("Dr.", "e.g.") do not end a sentence.
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


class SentenceSplitter:
    def __init__(self) -> None:
        self._buffer = ""

    def feed(self, text: str) -> list[str]:
        """Add streamed text; return the sentences it completed."""
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
