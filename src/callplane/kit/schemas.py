"""Wire types every domain's schemas share, as ``polar/kit/schemas.py``: text a database can
store, bounded free-form JSON, E.164 phone numbers, UTC timestamps, and the analyzer a call or an
agent carries."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints

from callplane.kit.e164 import phone_number

#: Bound on each free-form object a client sends (params, external_identifiers, cart, ...).
MAX_OBJECT_BYTES = 64 * 1024
MAX_KEY_CHARS = 255
#: BCP 47, loosely: a language subtag and up to a few more (``en``, ``pt-BR``, ``zh-Hant-TW``).
LANGUAGE_TAG = r"^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8}){0,4}$"
#: A uuid as JSON text (with or without hyphens), for configs that store one as written.
UUID_TEXT = r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"


def _check_text(value: str) -> str:
    # PostgreSQL cannot store NUL in text or jsonb, and a lone surrogate cannot be encoded to
    # UTF-8: both would fail deep in the driver, so they are refused as input instead.
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text") from None
    return value


def _walk_json(value: Any) -> int:
    """A size estimate of a free-form JSON value, in characters. Its other rules (depth,
    64-bit integers, finite numbers, no NUL) are the JSON value policy's (callplane.kit.jsonvalues),
    applied to request bodies and fixture documents before they get here."""
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, bool) or value is None:
        return 5
    if isinstance(value, int | float):
        return 24
    if isinstance(value, dict):
        return 2 + sum(len(key) + 3 + _walk_json(item) for key, item in value.items())
    if isinstance(value, list):
        return 2 + sum(_walk_json(item) + 1 for item in value)
    raise ValueError("is not a JSON value")


def check_json(value: Any) -> Any:
    if _walk_json(value) > MAX_OBJECT_BYTES:
        raise ValueError(f"is larger than {MAX_OBJECT_BYTES} bytes")
    return value


def _check_attributes(value: dict[str, Any]) -> dict[str, Any]:
    for key in value:
        if not key:
            raise ValueError("keys must not be empty")
        if len(key) > MAX_KEY_CHARS:
            raise ValueError(f"keys must be at most {MAX_KEY_CHARS} characters")
    check_json(value)
    return value


def normalize_number(value: str) -> str:
    """E.164 for a phone number (``callplane.kit.e164``: contact identifiers follow it too)."""
    return phone_number(value)


def _utc(value: datetime) -> datetime:
    # 0001-01-01T00:00:00+01:00 is a valid ISO 8601 text with no UTC equivalent: it is out of
    # range here rather than an overflow while binding the query.
    try:
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    except OverflowError:
        raise ValueError("must be a timestamp from 0001-01-01 to 9999-12-31 in UTC") from None


SafeStr = Annotated[str, AfterValidator(_check_text)]
#: A timestamp a client sends (a value without a zone is UTC), held in UTC.
UtcTimestamp = Annotated[datetime, AfterValidator(_utc)]
PhoneNumber = Annotated[str, StringConstraints(max_length=64), AfterValidator(normalize_number)]
JSONObject = Annotated[dict[str, Any], AfterValidator(check_json)]
Attributes = Annotated[dict[str, Any], AfterValidator(_check_attributes)]
ShortText = Annotated[SafeStr, StringConstraints(max_length=255)]
LongText = Annotated[SafeStr, StringConstraints(max_length=100_000)]


class OutputConfig(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: ShortText
    properties: JSONObject = {}


class Analyzer(BaseModel):
    id: UUID | None = None
    prompt: LongText
    output_config: OutputConfig
