"""Redaction: sensitive values in what a call says replaced by ``[entity]`` tokens before anything
is stored or sent (docs/privacy.md#redaction).

A ``Redactor`` is made per call (or text conversation) from the agent's ``redaction`` config and
handed to the one place lines enter the conversation's history (``brain.history.ChatHistory``):
the stored transcript, and everything read from it afterwards (summary, analyzers, events,
webhooks), never holds the value. It counts what it replaced, by entity, never the values.

Why not a library: Presidio's recognisers need spaCy and a language model (hundreds of MB,
downloaded at install), scrubadub's detectors do not check Luhn or mod 97; and neither reads
numbers said as words. ``phonenumbers`` (already a dependency) finds phone numbers.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from callplane.privacy.detectors import Found, detectors
from callplane.privacy.spoken import normalise

#: Digits in a line that make it sound like it held a value (a short IBAN's account, a date).
NUMBER_DIGITS = 6

#: The entities an agent's ``redaction.entities`` may name.
ENTITIES = ("credit_card", "ssn", "email", "phone_number", "date_of_birth", "iban")
#: The entities that are said as digits.
NUMERIC = frozenset({"credit_card", "ssn", "phone_number", "date_of_birth", "iban"})


def token(entity: str) -> str:
    return f"[{entity}]"


def find(text: str, entities: tuple[str, ...] | frozenset[str], region: str = "US") -> list[Found]:
    """The values of ``entities`` in ``text`` (positions in ``text``), in order, none
    overlapping: where two detectors claim the same characters, the earlier in ``detectors``
    wins (a card number is not also a phone number)."""
    if not entities or not text:
        return []
    normalised = normalise(text)
    working = normalised.text
    starts: list[int] = []
    kept: list[Found] = []
    for entity, detect in detectors(region).items():
        if entity not in entities:
            continue
        claimed = []
        for found in detect(working):
            start, end = normalised.origin(found.start, found.end)
            index = bisect.bisect_right(starts, start)
            if index > 0 and kept[index - 1].end > start:
                continue
            if index < len(kept) and kept[index].start < end:
                continue
            starts.insert(index, start)
            kept.insert(index, Found(entity, start, end))
            claimed.append(found)
        if claimed:
            # Later detectors do not read what an earlier one took (and need not: it is gone).
            working = _masked(working, claimed)
    return kept


def _masked(text: str, found: list[Found]) -> str:
    """``text`` with each found stretch overwritten by as many "#" (positions stay)."""
    parts: list[str] = []
    position = 0
    for item in sorted(found, key=lambda f: f.start):
        parts.append(text[position : item.start])
        parts.append("#" * (item.end - item.start))
        position = item.end
    parts.append(text[position:])
    return "".join(parts)


def redact(text: str, found: list[Found]) -> str:
    parts: list[str] = []
    position = 0
    for item in found:
        parts.append(text[position : item.start])
        parts.append(token(item.entity))
        position = item.end
    parts.append(text[position:])
    return "".join(parts)


@dataclass
class Redactor:
    """One conversation's redaction: its settings and what it has replaced so far."""

    entities: frozenset[str]
    #: Each redacted stretch of the recording is covered with a tone.
    recordings: bool = False
    #: The brain reads the redacted text too.
    llm: bool = False
    region: str = "US"
    #: Replacements by entity (``{"credit_card": 1}``): what the call page shows.
    counts: Counter[str] = field(default_factory=Counter)
    #: Where lines that were redacted were said: (role, start, end or None when unknown),
    #: seconds on the call's clock, for the recording's tone.
    said: list[tuple[str, float, float | None]] = field(default_factory=list)

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None, region: str = "US") -> Redactor | None:
        """The agent config's ``redaction`` (checked when it was committed); None when it
        names no entity."""
        if not config or not config.get("entities"):
            return None
        return cls(
            frozenset(config["entities"]),
            recordings=bool(config.get("recordings")),
            llm=bool(config.get("llm")),
            region=region,
        )

    def text(self, text: str, *, count: bool = True) -> str:
        found = find(text, self.entities, self.region)
        if count:
            self.counts.update(item.entity for item in found)
        return redact(text, found) if found else text

    def value(self, value: Any, *, count: bool = True) -> Any:
        """A JSON value (a tool's arguments) with every string in it redacted; a number that
        is itself a value (a card number sent as an integer) becomes its token."""
        if isinstance(value, str):
            return self.text(value, count=count)
        if isinstance(value, bool) or not isinstance(value, int | float):
            if isinstance(value, Mapping):
                return {k: self.value(v, count=count) for k, v in value.items()}
            if isinstance(value, list):
                return [self.value(v, count=count) for v in value]
            return value
        written = self.text(str(value), count=count)
        return value if written == str(value) else written

    def covers(self, role: str, text: str, replaced: bool) -> bool:
        """Whether a line is covered in the recording: something in it was replaced, or (a
        caller's words, as the recogniser heard them) it sounds like it held a value."""
        return replaced or (self.recordings and role == "user" and self.numbers_in(text))

    def numbers_in(self, text: str) -> bool:
        """Whether ``text`` holds as many digits as a short value (``NUMBER_DIGITS``) while a
        numeric entity is redacted. A recogniser that mishears one digit of a card writes a
        number that fails the Luhn check, or splits it ("453, I'm 148, 0343647"): the text
        keeps what it wrote, but the recording still holds the card, so ``recordings``
        covers such lines too. Covering a line that only held an order id costs little."""
        if not self.entities & NUMERIC:
            return False
        return sum(c.isdigit() for c in normalise(text).text) >= NUMBER_DIGITS

    def total(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> dict[str, int]:
        """The counts as stored on the call, entity names sorted."""
        return {entity: self.counts[entity] for entity in sorted(self.counts)}
