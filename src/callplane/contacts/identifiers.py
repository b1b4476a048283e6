"""Caller identifiers (SPEC PUT /contacts/{phoneNumber}/data; DESIGN §5).

Text made only of digits, spaces and ``+-().`` is a phone number: parsed with ``phonenumbers``
(region US when it has no ``+``), required to be a possible number, and keyed by its E.164 form,
so ``(415) 555-0123``, ``415.555.0123`` and ``+1 415 555 0123`` are one contact. Anything else
(``sip:alice@example.com``, ``whatsapp-4711``, ``José``) is a non-phone identifier, kept
verbatim: 1–128 characters, not blank, no control characters. It is case-sensitive and not
Unicode-normalized, because "verbatim" means other systems get back exactly what they sent.

The identifier is a path segment, already URL-decoded by the server: ``+`` may be sent as is or as
``%2B``; a ``/`` (even as ``%2F``) cannot be part of an identifier.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

import phonenumbers

from callplane.errors import InvalidInput
from callplane.models.contacts import IDENTIFIER_MAX_LENGTH

_PHONE_CHARACTERS = frozenset("0123456789 +-().")
_LOC = ("path", "phoneNumber")


def normalize_identifier(raw: str) -> str:
    """The stored key of ``raw``: E.164 for a phone number, ``raw`` itself otherwise."""
    if all(c in _PHONE_CHARACTERS for c in raw):
        return _e164(raw)
    if len(raw) > IDENTIFIER_MAX_LENGTH:
        raise InvalidInput(
            f"must be a phone number or an identifier of at most {IDENTIFIER_MAX_LENGTH} "
            "characters",
            loc=_LOC,
        )
    if not raw.strip():
        raise InvalidInput("must not be blank", loc=_LOC)
    # Cc: control characters (NUL, tab, newline, DEL...); Cs: lone surrogates, not storable text.
    if any(unicodedata.category(c) in ("Cc", "Cs") for c in raw):
        raise InvalidInput("must not contain control characters", loc=_LOC)
    return raw


@lru_cache(maxsize=4096)
def _e164(raw: str) -> str:
    # Cached: the same few numbers are written and read over and over, and parsing is the most
    # expensive step of a contact-data request. Errors are not cached (exceptions propagate).
    try:
        number = phonenumbers.parse(raw, None if raw.lstrip().startswith("+") else "US")
    except phonenumbers.NumberParseException:
        raise InvalidInput("is not a valid phone number", loc=_LOC) from None
    if not phonenumbers.is_possible_number(number):
        raise InvalidInput("is not a possible phone number", loc=_LOC) from None
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
