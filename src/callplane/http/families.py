"""Error families (DESIGN §4): every error of a route is rendered in the shape its family gives.

A router declares its family once (``family_router(FAMILY)``); all errors raised while handling
one of its routes (authentication, rate limits, malformed JSON, bad path/query/body values,
domain errors) come through ``render`` here, so no route can leak a different shape.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from callplane.errors import CallplaneError, InvalidInput, RateLimited, Unauthorized, Unavailable


class DetailItem(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ValidationDetail(BaseModel):
    detail: list[DetailItem]


class StatusError(BaseModel):
    status: str = "error"
    success: bool = False
    error: str
    errors: list[str]


class FindError(BaseModel):
    success: bool = False
    errors: list[str]


class PlainError(BaseModel):
    error: str


class DetailError(BaseModel):
    detail: str


@dataclass(frozen=True)
class ErrorFamily:
    name: str
    #: (message, messages) -> body, for every error that is not rendered as a validation list
    body: Callable[[str, list[str]], dict[str, Any]]
    error_model: type[BaseModel]
    #: request validation errors rendered as ``{"detail": [{loc, msg, type}]}``
    validation_as_detail: bool

    def openapi_responses(self) -> dict[int | str, dict[str, Any]]:
        validation = ValidationDetail if self.validation_as_detail else self.error_model
        described = {
            401: ("Missing, malformed, unknown or revoked API key", self.error_model),
            404: ("Not found (also another organization's resource)", self.error_model),
            422: ("Invalid input", validation),
            429: ("Rate limit exceeded; see Retry-After", self.error_model),
        }
        return {code: {"description": d, "model": m} for code, (d, m) in described.items()}


def _status_body(message: str, messages: list[str]) -> dict[str, Any]:
    return {"status": "error", "success": False, "error": message, "errors": messages}


FIND = ErrorFamily(
    "find", lambda _m, ms: {"success": False, "errors": ms}, FindError, validation_as_detail=False
)
STATUS = ErrorFamily("status", _status_body, StatusError, validation_as_detail=False)
EXTERNAL_CALLS = ErrorFamily("external_calls", _status_body, StatusError, validation_as_detail=True)
PLAIN = ErrorFamily("plain", lambda m, _ms: {"error": m}, PlainError, validation_as_detail=False)
VOICES = ErrorFamily("voices", lambda m, _ms: {"error": m}, PlainError, validation_as_detail=True)
DETAIL = ErrorFamily("detail", lambda m, _ms: {"detail": m}, DetailError, validation_as_detail=True)


_LOCATION_ROOTS = {"body", "query", "path", "header", "cookie"}


def _clean_msg(error: dict[str, Any]) -> str:
    # Some pydantic messages quote part of the input (the bad character of a uuid); the input is
    # never echoed back (DESIGN §4), so those are cut to their first clause.
    msg = str(error.get("msg", "Invalid value"))
    if error.get("type") in ("uuid_parsing", "uuid_type") or "found `" in msg:
        msg = msg.split(",")[0]
    return msg


def detail_items(errors: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "loc": [part for part in e.get("loc", ()) if isinstance(part, str | int)],
            "msg": _clean_msg(e),
            "type": str(e.get("type", "value_error")),
        }
        for e in errors
    ]


def describe(item: dict[str, Any]) -> str:
    """A one-line message naming the field: ``"ttlSeconds: Input should be a valid integer"``."""
    loc = [str(p) for p in item["loc"]]
    if loc and loc[0] in _LOCATION_ROOTS:
        loc = loc[1:]
    field = ".".join(loc)
    if item["type"] == "json_invalid":
        return "Request body is not valid JSON"
    return f"{field}: {item['msg']}" if field else item["msg"]


@dataclass
class Rendered:
    status_code: int
    body: dict[str, Any]
    headers: dict[str, str]


def render_validation(family: ErrorFamily, errors: Sequence[dict[str, Any]]) -> Rendered:
    items = detail_items(errors)
    if family.validation_as_detail:
        return Rendered(422, {"detail": items}, {})
    messages = [describe(i) for i in items] or ["Invalid input"]
    return Rendered(422, family.body(messages[0], messages), {})


def render_error(family: ErrorFamily, exc: CallplaneError) -> Rendered:
    if isinstance(exc, InvalidInput):
        item = {"loc": list(exc.loc), "msg": exc.message, "type": exc.type}
        return render_validation(family, [item])
    headers: dict[str, str] = {}
    if isinstance(exc, Unauthorized):
        headers["WWW-Authenticate"] = "Bearer"
    elif isinstance(exc, RateLimited | Unavailable):
        headers["Retry-After"] = str(exc.retry_after)
    return Rendered(exc.status_code, family.body(exc.message, exc.errors), headers)
