"""What each redaction entity looks like, found in normalised text (``spoken.py``).

Every detector scans the text once, with patterns that cannot backtrack over more than a few
characters (no nested open-ended repeats), so a 40,000-character line costs milliseconds:

    credit_card    13-19 digits in groups, passing the Luhn check (an order id rarely does)
    ssn            a US social security number: 3-2-4 digits, or nine said one by one
    email          local@domain.tld
    phone_number   what ``phonenumbers``' matcher finds (any country in + form, else the
                   default region's)
    date_of_birth  a whole date with a year from 1900 to this year, in figures or words
    iban           a country code, two check digits and the account, passing mod 97
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import phonenumbers


@dataclass(frozen=True)
class Found:
    entity: str
    start: int
    end: int


# -- digit runs --------------------------------------------------------------------------------

#: Digits in groups separated by one or two of space, hyphen, dot, comma or slash. The
#: separators are not digits, so the pattern cannot match one stretch in two ways.
_RUN = re.compile(r"\d+(?:[ \-.,/]{1,2}\d+)*")


@dataclass(frozen=True)
class _Run:
    start: int
    #: Each digit's position in the text.
    positions: list[int]
    #: How many digits each group has.
    groups: list[int]

    @property
    def digits(self) -> int:
        return len(self.positions)


def _runs(text: str) -> Iterator[tuple[_Run, str]]:
    for match in _RUN.finditer(text):
        found = match.group()
        positions = [match.start() + i for i, c in enumerate(found) if c.isdigit()]
        groups = [len(g) for g in re.findall(r"\d+", found)]
        yield _Run(match.start(), positions, groups), "".join(text[p] for p in positions)


def luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _cards_in(run: _Run, digits: str) -> Iterator[tuple[int, int]]:
    """Digit indices [first, last) of the card numbers in the run: the whole run, or, in a
    longer one (a card said with its expiry, two cards in a row), stretches that begin and
    end on group boundaries and begin like a card (2-6), taken from the left."""
    if 13 <= len(digits) <= 19:
        if luhn(digits):
            yield 0, len(digits)
        return
    if len(digits) < 13:
        return
    bounds = [0, *_cumulative(run.groups)]
    ends = set(bounds)
    index = 0
    while index < len(bounds) - 1:
        first = bounds[index]
        taken = None
        if digits[first] in "23456":
            for length in range(19, 12, -1):
                if first + length in ends and luhn(digits[first : first + length]):
                    taken = first + length
                    break
        if taken is None:
            index += 1
            continue
        yield first, taken
        index = bounds.index(taken, index)


def _cumulative(groups: list[int]) -> Iterator[int]:
    total = 0
    for size in groups:
        total += size
        yield total


def _credit_cards(text: str) -> Iterator[Found]:
    for run, digits in _runs(text):
        for first, last in _cards_in(run, digits):
            yield Found("credit_card", run.positions[first], run.positions[last - 1] + 1)


_SSN_CONTEXT = re.compile(r"social|security|ssn|s\.s\.n", re.IGNORECASE)


def _ssns(text: str) -> Iterator[Found]:
    for run, digits in _runs(text):
        if run.digits != 9:
            continue
        area, group, serial = digits[:3], digits[3:5], digits[5:]
        if area in ("000", "666") or area[0] == "9" or group == "00" or serial == "0000":
            continue
        said_one_by_one = all(size == 1 for size in run.groups)
        context = _SSN_CONTEXT.search(text, max(0, run.start - 40), run.start) is not None
        if run.groups == [3, 2, 4] or said_one_by_one or context:
            yield Found("ssn", run.positions[0], run.positions[-1] + 1)


# -- email -------------------------------------------------------------------------------------

_LOCAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-")
_DOMAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-")


def _emails(text: str) -> Iterator[Found]:
    """Each "@" grows left over local-part characters and right over domain ones: both stop at
    another "@", so every character is looked at a bounded number of times."""
    at = text.find("@")
    while at != -1:
        start = at
        while start > 0 and text[start - 1] in _LOCAL:
            start -= 1
        end = at + 1
        while end < len(text) and text[end] in _DOMAIN:
            end += 1
        domain = text[at + 1 : end].rstrip(".-")
        labels = domain.split(".")
        local = text[start:at].lstrip(".")
        tld = labels[-1]
        if local and len(labels) >= 2 and all(labels) and tld.isalpha() and len(tld) >= 2:
            yield Found("email", at - len(local), at + 1 + len(domain))
        at = text.find("@", at + 1)


# -- phone numbers ------------------------------------------------------------------------------


def _commas_as_spaces(text: str) -> str:
    """Commas between digit groups read as spaces ("415, 555, 0123" is how a recogniser
    writes a number said in three breaths), positions kept."""
    return _RUN.sub(lambda match: match.group().replace(",", " "), text)


def _phone_numbers(region: str) -> Callable[[str], Iterator[Found]]:
    def find(text: str) -> Iterator[Found]:
        for match in phonenumbers.PhoneNumberMatcher(_commas_as_spaces(text), region):
            yield Found("phone_number", match.start, match.end)

    return find


# -- dates of birth ------------------------------------------------------------------------------

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_DAY = r"(?:[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?:19|20)\d\d"
_DATES = re.compile(
    rf"\b(?:"
    rf"[0-3]?\d[/.\-][0-3]?\d[/.\-](?P<y1>{_YEAR})"  # 03/14/1985, 14.03.1985
    rf"|(?P<y2>{_YEAR})[/.\-][01]?\d[/.\-][0-3]?\d"  # 1985-03-14
    rf"|(?:{_MONTHS})\.?\s{{1,2}}{_DAY},?\s{{1,2}}(?:of\s)?(?P<y3>{_YEAR})"  # March 14, 1985
    rf"|{_DAY}\s{{1,2}}(?:of\s{{1,2}})?(?:{_MONTHS})\.?,?\s{{1,2}}(?P<y4>{_YEAR})"  # 14 March 1985
    rf")\b",
    re.IGNORECASE,
)


def _dates_of_birth(text: str) -> Iterator[Found]:
    this_year = datetime.now(UTC).year
    for match in _DATES.finditer(text):
        year = int(next(y for y in match.group("y1", "y2", "y3", "y4") if y))
        if 1900 <= year <= this_year:
            yield Found("date_of_birth", match.start(), match.end())


# -- IBAN --------------------------------------------------------------------------------------

#: Each country's IBAN length (the IBAN registry's): only these countries are looked for.
IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BR": 29, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20,
    "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18,
    "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IS": 26, "IT": 27, "JO": 30,
    "KW": 30, "KZ": 20, "LB": 28, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24,
    "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24, "PL": 28,
    "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24, "SE": 24, "SI": 19, "SK": 24,
    "SM": 27, "TN": 24, "TR": 26, "UA": 29, "VG": 24, "XK": 20,
}  # fmt: skip
#: A country code and check digits, letters and digits allowing one separator between each.
_IBAN_HEAD = re.compile(r"\b[A-Z][ \-]?[A-Z][ \-]?\d[ \-]?\d")


def mod97(iban: str) -> bool:
    moved = iban[4:] + iban[:4]
    remainder = 0
    for char in moved:
        value = int(char, 36)
        remainder = (remainder * (100 if value > 9 else 10) + value) % 97
    return remainder == 1


def _ibans(text: str) -> Iterator[Found]:
    position = 0
    while (head := _IBAN_HEAD.search(text, position)) is not None:
        # Up to 34 letters and digits, each separated from the next by at most one space or
        # hyphen: a bounded walk from each head.
        chars: list[tuple[str, int]] = []
        index = head.start()
        while index < len(text) and len(chars) < 34:
            char = text[index]
            if char.isascii() and char.isalnum():
                chars.append((char.upper(), index))
                index += 1
            elif char in " -" and index + 1 < len(text) and text[index + 1].isalnum():
                index += 1
            else:
                break
        length = IBAN_LENGTHS.get(chars[0][0] + chars[1][0], 99)
        found = None
        if len(chars) >= length and mod97("".join(c for c, _ in chars[:length])):
            found = Found("iban", chars[0][1], chars[length - 1][1] + 1)
        if found is not None:
            yield found
            position = found.end
        else:
            position = head.start() + 1


def detectors(region: str = "US") -> dict[str, Callable[[str], Iterator[Found]]]:
    """Each entity's detector, in the order overlaps are settled (an earlier one wins)."""
    return {
        "credit_card": _credit_cards,
        "iban": _ibans,
        "ssn": _ssns,
        "email": _emails,
        "date_of_birth": _dates_of_birth,
        "phone_number": _phone_numbers(region),
    }
