"""One policy for text that names a phone number: a call's ``to_number``/``from_number`` and a
contact's identifier (docs/api-contract.md#contact-data) read the same string the same way.

- *Phone text* is made only of digits, spaces and ``+-().``. A digit is a decimal digit of any
  script (Arabic-Indic ``٤``, full-width ``４``...), a space any Unicode space (NBSP, ideographic
  space...), and full-width ``＋－（）．`` count as their ASCII forms: all of these are what
  ``phonenumbers`` itself reads as a number, so ``＋１ ４１５…`` and ``+1 415…`` are one number.
  Phone text is parsed with ``phonenumbers`` (region US without a ``+``), must be a possible
  number, and becomes its E.164 form (``e164``).
- Invisible format characters (bidirectional marks such as U+200F, zero-width spaces, the BOM,
  soft hyphens) are refused wherever they appear (``check_visible``): a string holding them
  looks exactly like one without them, so it would name a different contact, or dial a number
  the client never saw. The joiners U+200C/U+200D are not refused: they shape visible text
  (emoji sequences, Persian and Indic scripts).
- Anything else (letters, an emoji before the number, an extension ``x12``) is not a phone
  number: a call refuses it, a contact keeps it verbatim as a non-phone identifier. Nothing is
  silently dropped to make a number out of it.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import phonenumbers

_PUNCTUATION = frozenset("+-().")
_JOINERS = frozenset("\u200c\u200d")


class NotAPhoneNumber(ValueError):
    """Text that the policy refuses as a phone number; the message is for the client."""


def check_visible(text: str) -> None:
    """Refuse invisible format characters (see the module docstring)."""
    if any(unicodedata.category(c) == "Cf" and c not in _JOINERS for c in text):
        raise NotAPhoneNumber("must not contain invisible formatting characters")


def phone_text(text: str) -> str | None:
    """``text`` with its digits and spaces in ASCII when it is phone text, else None."""
    out = []
    for c in text:
        if c.isascii():
            if not (c.isdigit() or c == " " or c in _PUNCTUATION):
                return None
            out.append(c)
            continue
        digit = unicodedata.decimal(c, None)
        if digit is not None:
            out.append(str(digit))
        elif unicodedata.category(c) == "Zs":
            out.append(" ")
        elif (folded := unicodedata.normalize("NFKC", c)) in _PUNCTUATION:
            out.append(folded)
        else:
            return None
    return "".join(out)


def e164(text: str) -> str:
    """The E.164 form of phone text (``phone_text`` already applied), or NotAPhoneNumber."""
    return _parse(text)


@lru_cache(maxsize=4096)
def _parse(text: str) -> str:
    # Cached: the same few numbers are written and read over and over, and parsing is the most
    # expensive step of a contact-data request. Errors are not cached (exceptions propagate).
    try:
        number = phonenumbers.parse(text, None if text.lstrip().startswith("+") else "US")
    except phonenumbers.NumberParseException:
        raise NotAPhoneNumber("is not a valid phone number") from None
    if not phonenumbers.is_possible_number(number):
        raise NotAPhoneNumber("is not a possible phone number")
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


#: A North American number already in E.164 (``+1``, then ten digits, the first 2-9): what
#: ``phonenumbers`` would give back unchanged, as every such number is possible in every
#: region of calling code 1. Checked first: a campaign's upload of 100,000 numbers would
#: otherwise spend most of its time parsing them.
_NANP_E164 = re.compile(r"\+1[2-9][0-9]{9}")


def phone_number(text: str) -> str:
    """A call's number: phone text in E.164, anything else refused."""
    if _NANP_E164.fullmatch(text):
        return text
    check_visible(text)
    shaped = phone_text(text)
    if shaped is None:
        raise NotAPhoneNumber("is not a phone number (digits, spaces and + - ( ) . only)")
    return e164(shaped)
