"""Caller identifiers (SPEC PUT /contacts/{phoneNumber}/data; docs/api-contract.md#contact-data).

Phone text (digits, spaces and ``+-().``, in any script: ``callplane.kit.e164``, the policy calls
use for ``to_number`` too) is a phone number, keyed by its E.164 form, so ``(415) 555-0123``,
``415.555.0123``, ``+1 415 555 0123`` and ``٤١٥٥٥٥٠١٢٣`` are one contact. Anything else
(``sip:alice@example.com``, ``whatsapp-4711``, ``José``) is a non-phone identifier, kept
verbatim: 1–128 characters, not blank, no control characters. It is case-sensitive and not
Unicode-normalized, because "verbatim" means other systems get back exactly what they sent.
Invisible formatting characters (a right-to-left mark...) are refused in both kinds: an
identifier holding one would look exactly like another contact's.

The identifier is a path segment, already URL-decoded by the server: ``+`` may be sent as is or as
``%2B``; a ``/`` (even as ``%2F``) cannot be part of an identifier.
"""

from __future__ import annotations

import unicodedata

from callplane.errors import InvalidInput
from callplane.kit.e164 import NotAPhoneNumber, check_visible, e164, phone_text
from callplane.models.contacts import IDENTIFIER_MAX_LENGTH

_LOC = ("path", "phoneNumber")


def normalize_identifier(raw: str) -> str:
    """The stored key of ``raw``: E.164 for a phone number, ``raw`` itself otherwise."""
    try:
        check_visible(raw)
        shaped = phone_text(raw)
        if shaped is not None:
            return e164(shaped)
    except NotAPhoneNumber as exc:
        raise InvalidInput(str(exc), loc=_LOC) from None
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
