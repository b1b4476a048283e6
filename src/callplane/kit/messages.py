"""Plain messages for invalid input: each names the field once, in plain words.

Validation errors come from pydantic (request models, path and query parameters) and from the
services (``InvalidInput``). Pydantic's texts carry library prefixes ("Value error, ...") and
internal limits the client never sent ("... after validation, not 2097152"); they are rewritten
here from the error's type and context. The field is named by the location, once: a message that
already starts with a field name (services write ``"score: must be an integer"``) is kept as it
is instead of being prefixed again. The input itself is never echoed back
(docs/api-contract.md#error-shapes).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

LOCATION_ROOTS = frozenset({"body", "query", "path", "header", "cookie"})

_NAMES_A_FIELD = re.compile(r"^[A-Za-z_][\w.\[\]-]*: ")
_PYDANTIC_PREFIXES = ("Value error, ", "Assertion failed, ")


def _length(ctx: Mapping[str, Any], bound: str, unit: str) -> str:
    limit = ctx.get(bound)
    word = "at most" if bound == "max_length" else "at least"
    return f"must be {word} {limit} {unit}" + ("" if limit == 1 else "s")


def _kind(ctx: Mapping[str, Any]) -> str:
    return "character" if ctx.get("field_type") in (None, "Value", "String") else "item"


_BY_TYPE: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "missing": lambda _c: "is required",
    "string_too_long": lambda c: _length(c, "max_length", "character"),
    "string_too_short": lambda c: _length(c, "min_length", "character"),
    "too_long": lambda c: _length(c, "max_length", _kind(c)),
    "too_short": lambda c: _length(c, "min_length", _kind(c)),
    "string_type": lambda _c: "must be a string",
    "int_type": lambda _c: "must be an integer",
    "int_parsing": lambda _c: "must be an integer",
    "int_from_float": lambda _c: "must be an integer",
    "float_type": lambda _c: "must be a number",
    "float_parsing": lambda _c: "must be a number",
    "bool_type": lambda _c: "must be true or false",
    "bool_parsing": lambda _c: "must be true or false",
    "dict_type": lambda _c: "must be an object",
    "model_type": lambda _c: "must be an object",
    "model_attributes_type": lambda _c: "must be an object",
    "list_type": lambda _c: "must be a list",
    "uuid_parsing": lambda _c: "must be a UUID",
    "uuid_type": lambda _c: "must be a UUID",
    "greater_than_equal": lambda c: f"must be at least {c.get('ge')}",
    "greater_than": lambda c: f"must be greater than {c.get('gt')}",
    "less_than_equal": lambda c: f"must be at most {c.get('le')}",
    "less_than": lambda c: f"must be less than {c.get('lt')}",
    "literal_error": lambda c: f"must be one of {c.get('expected')}",
    "enum": lambda c: f"must be one of {c.get('expected')}",
    "extra_forbidden": lambda _c: "is not a known field",
    "datetime_parsing": lambda _c: "must be an ISO 8601 timestamp",
    "datetime_from_date_parsing": lambda _c: "must be an ISO 8601 timestamp",
    "datetime_type": lambda _c: "must be an ISO 8601 timestamp",
    "timezone_aware": lambda _c: "must be a timestamp with a time zone",
    "url_parsing": lambda _c: "must be a URL",
    "url_scheme": lambda c: f"must be a URL with scheme {c.get('expected_schemes')}",
}


def plain_message(error: Mapping[str, Any]) -> str:
    """The message of one validation error, without the field name."""
    kind = str(error.get("type", ""))
    ctx: Mapping[str, Any] = error.get("ctx") or {}
    rewrite = _BY_TYPE.get(kind)
    if rewrite is not None:
        return rewrite(ctx)
    message = str(error.get("msg") or "is invalid")
    for prefix in _PYDANTIC_PREFIXES:
        if message.startswith(prefix):
            message = message[len(prefix) :]
    if kind in ("uuid_parsing", "uuid_type") or "found `" in message:
        message = message.split(",")[0]  # pydantic quotes the bad character: never echo input
    return message


def field_name(loc: list[str | int] | tuple[str | int, ...]) -> str:
    parts = list(loc)
    if parts and parts[0] in LOCATION_ROOTS:
        parts = parts[1:]
    return ".".join(str(p) for p in parts)


def describe(loc: list[str | int] | tuple[str | int, ...], message: str, kind: str = "") -> str:
    """One line naming the field once: ``"ttlSeconds: must be an integer"``."""
    if kind == "json_invalid":
        return message if message.startswith("Request body") else "Request body is not valid JSON"
    field = field_name(loc)
    if not field:
        if kind == "missing" or message == "is required":
            return "Request body is required"
        return message
    if _NAMES_A_FIELD.match(message):
        return message
    return f"{field}: {_without_name(message, field)}"


def field_messages(errors: Iterable[Mapping[str, Any]]) -> list[str]:
    """Pydantic's errors (``exc.errors()``) as one line each naming its field, for a form or a
    stored document that is checked outside a route (a route's own body is the families')."""
    return [describe(list(e["loc"]), plain_message(e), str(e["type"])) for e in errors]


def _without_name(message: str, field: str) -> str:
    """A service's sentence that opens with the field ("friendly_name must be ...") loses it:
    the label names the field, once ("friendly_name: must be ...")."""
    last = field.rsplit(".", 1)[-1]
    for name in sorted({field, last}, key=len, reverse=True):
        if name and message.startswith(name + " "):
            return message[len(name) + 1 :]
    return message
