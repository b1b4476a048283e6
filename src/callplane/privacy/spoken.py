"""Numbers said as words, written as digits, with a map back to the words.

A recogniser writes what a caller says: "four one one one, double five" as often as "4111 55".
Detectors read the normalised text; each of its characters remembers the stretch of the
original it came from, so what a detector finds is replaced in the original, spoken words
included.

    digits      zero oh o one … nine            -> 0 … 9
    repeats     double five, triple oh          -> 55, 000
    two digits  ten … nineteen, twenty … ninety, twenty-five / twenty five -> 10 … 99
    years       nineteen eighty-five, nineteen oh five, twenty twenty -> 1985, 1905, 2020
    ordinals    first … thirty-first            -> 1 … 31 (days of a date)
    email       at, dot                         -> @, .  (only between words)

One pass over the words, so the cost is linear in the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_UNITS = {
    "zero": "0",
    "oh": "0",
    "o": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
}
_TEENS = {
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
    "thirteen": "13",
    "fourteen": "14",
    "fifteen": "15",
    "sixteen": "16",
    "seventeen": "17",
    "eighteen": "18",
    "nineteen": "19",
}
_TENS = {
    "twenty": "2",
    "thirty": "3",
    "forty": "4",
    "fifty": "5",
    "sixty": "6",
    "seventy": "7",
    "eighty": "8",
    "ninety": "9",
}
_ORDINALS = {
    "first": "1",
    "second": "2",
    "third": "3",
    "fourth": "4",
    "fifth": "5",
    "sixth": "6",
    "seventh": "7",
    "eighth": "8",
    "ninth": "9",
    "tenth": "10",
    "eleventh": "11",
    "twelfth": "12",
    "thirteenth": "13",
    "fourteenth": "14",
    "fifteenth": "15",
    "sixteenth": "16",
    "seventeenth": "17",
    "eighteenth": "18",
    "nineteenth": "19",
    "twentieth": "20",
    "thirtieth": "30",
}
_REPEATS = {"double": 2, "triple": 3}
_ZEROS = ("zero", "oh", "o")
_SYMBOLS = {"at": "@", "dot": "."}

#: Words (letters and apostrophes), or anything else one character at a time.
_TOKEN = re.compile(r"[A-Za-z']+|\s+|.", re.DOTALL)


@dataclass(frozen=True)
class Normalised:
    """``text`` with spoken numbers as digits; character ``i`` of it came from
    ``original[starts[i]:ends[i]]``."""

    text: str
    starts: list[int]
    ends: list[int]

    def origin(self, start: int, end: int) -> tuple[int, int]:
        """The stretch of the original that ``text[start:end]`` came from."""
        return self.starts[start], self.ends[end - 1]


@dataclass
class _Token:
    text: str
    start: int
    end: int
    #: What it stands for in the normalised text, when it is said as a number (or a symbol).
    value: str | None = None
    #: Absorbed into the token before it (``five`` of ``twenty five``).
    joined: bool = False


def _tokens(text: str) -> list[_Token]:
    return [_Token(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _between_words(tokens: list[_Token], index: int) -> bool:
    if index < 2 or index + 2 >= len(tokens):
        return False
    before, after = tokens[index - 2], tokens[index + 2]
    return (
        tokens[index - 1].text == " "
        and tokens[index + 1].text == " "
        and before.text[-1].isalnum()
        and after.text[0].isalnum()
        and not after.text[0].isdigit()
    )


def _next_word(tokens: list[_Token], index: int) -> int | None:
    """The word right after ``tokens[index]`` when only a space or a hyphen lies between."""
    gap = index + 1
    if gap < len(tokens) and (tokens[gap].text.isspace() or tokens[gap].text == "-"):
        gap += 1
    if gap < len(tokens) and tokens[gap].text[0].isalpha():
        return gap
    return None


def _join(tokens: list[_Token], head: int, last: int) -> None:
    """Words ``head+1 .. last`` (and the spaces between) are part of the number at ``head``."""
    for token in tokens[head + 1 : last + 1]:
        token.joined = True


def _read_numbers(tokens: list[_Token]) -> None:
    """Give each number word its digits (one pass, looking at most two words ahead)."""
    for index, token in enumerate(tokens):
        word = token.text.lower()
        if not word[0].isalpha() or token.joined:
            continue
        after = _next_word(tokens, index)
        following = tokens[after].text.lower() if after is not None else ""
        year = None
        if after is not None and word in ("nineteen", "twenty"):
            year = _year_tail(tokens, after)
        if after is not None and word in _REPEATS and following in _UNITS:
            token.value = _UNITS[following] * _REPEATS[word]
            _join(tokens, index, after)
        elif word in ("nineteen", "twenty") and year is not None:
            tail, last = year
            token.value = _TEENS.get(word, "20") + tail
            _join(tokens, index, last)
        elif word in _TENS:
            if after is not None and following in _UNITS and following not in _ZEROS:
                token.value = _TENS[word] + _UNITS[following]
                _join(tokens, index, after)
            elif after is not None and len(_ORDINALS.get(following, "--")) == 1:
                token.value = _TENS[word] + _ORDINALS[following]
                _join(tokens, index, after)
            else:
                token.value = _TENS[word] + "0"
        else:
            token.value = _UNITS.get(word) or _TEENS.get(word) or _ORDINALS.get(word)


def _year_tail(tokens: list[_Token], index: int) -> tuple[str, int] | None:
    """The last two digits of a year said as "nineteen <tail>" ("eighty-five", "oh five",
    "twenty") and the index of its last word; None when the words are no such tail."""
    word = tokens[index].text.lower()
    after = _next_word(tokens, index)
    following = tokens[after].text.lower() if after is not None else ""
    if word in ("oh", "o") and after is not None and following in _UNITS:
        return "0" + _UNITS[following], after
    if word in _TENS:
        if after is not None and following in _UNITS and following not in _ZEROS:
            return _TENS[word] + _UNITS[following], after
        return _TENS[word] + "0", index
    if word in _TEENS:
        return _TEENS[word], index
    return None


def normalise(text: str) -> Normalised:
    """``text`` with its spoken numbers (and an email's spoken "at" and "dot") written out."""
    tokens = _tokens(text)
    _read_numbers(tokens)
    for index, token in enumerate(tokens):
        symbol = _SYMBOLS.get(token.text.lower())
        # "jane at example dot com": only with a word or digit on each side.
        if symbol and token.value is None and _between_words(tokens, index):
            token.value = symbol
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    #: How many characters the last number written out has (its joined words extend it).
    number = 0
    for index, token in enumerate(tokens):
        if token.joined:
            ends[len(ends) - number :] = [token.end] * number
            continue
        if token.text.isspace() and _around_symbol(tokens, index):
            continue
        if token.value is not None:
            out.append(token.value)
            starts.extend([token.start] * len(token.value))
            ends.extend([token.end] * len(token.value))
            number = len(token.value)
            continue
        out.append(token.text)
        starts.extend(range(token.start, token.end))
        ends.extend(range(token.start + 1, token.end + 1))
        number = 0
    return Normalised("".join(out), starts, ends)


def _around_symbol(tokens: list[_Token], index: int) -> bool:
    """A space beside a spoken "at" or "dot" is dropped ("jane at example" -> "jane@example");
    the space between the words of a number is kept, so digits stay in their groups."""
    before = tokens[index - 1] if index > 0 else None
    after = tokens[index + 1] if index + 1 < len(tokens) else None
    return any(t is not None and t.value in ("@", ".") for t in (before, after))
