"""Error families (docs/api-contract.md#error-shapes): every error of a route is rendered in the
shape its family gives.

A router declares its family once (``family_router(FAMILY)``); all errors raised while handling
one of its routes (authentication, rate limits, malformed JSON, bad path/query/body values,
domain errors) are rendered by ``http.errors`` through the builders here, so no route can leak a
different shape.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from callplane.errors import CallplaneError, InvalidInput, RateLimited, Unauthorized, Unavailable
from callplane.kit.messages import describe, plain_message


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


def detail_items(errors: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pydantic's errors as ``{loc, msg, type}`` items with plain messages (``kit.messages``)."""
    return [
        {
            "loc": [part for part in e.get("loc", ()) if isinstance(part, str | int)],
            "msg": plain_message(e),
            "type": str(e.get("type", "value_error")),
        }
        for e in errors
    ]


@dataclass
class Rendered:
    status_code: int
    body: dict[str, Any]
    headers: dict[str, str]


def _render_items(family: ErrorFamily, items: list[dict[str, Any]]) -> Rendered:
    if family.validation_as_detail:
        return Rendered(422, {"detail": items}, {})
    messages = [describe(i["loc"], i["msg"], i["type"]) for i in items] or ["Invalid input"]
    return Rendered(422, family.body(messages[0], messages), {})


def render_validation(family: ErrorFamily, errors: Sequence[dict[str, Any]]) -> Rendered:
    return _render_items(family, detail_items(errors))


def render_error(family: ErrorFamily, exc: CallplaneError) -> Rendered:
    if isinstance(exc, InvalidInput):
        return _render_items(family, [{"loc": list(exc.loc), "msg": exc.message, "type": exc.type}])
    headers: dict[str, str] = {}
    if isinstance(exc, Unauthorized):
        headers["WWW-Authenticate"] = "Bearer"
    elif isinstance(exc, RateLimited | Unavailable):
        headers["Retry-After"] = str(exc.retry_after)
    return Rendered(exc.status_code, family.body(exc.message, exc.errors), headers)
