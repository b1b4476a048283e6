"""The one error type: every failure of a call to the API is an ``APIError``.

APIError                  the server answered with an error status (``status_code`` is set)
 └── APIConnectionError   no answer: the connection failed or timed out (``status_code`` None)
"""

from __future__ import annotations

from typing import Any

import httpx


class APIError(Exception):
    """An error answer of the API, in whichever shape its route family uses (SPEC "Errors")."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        errors: list[str] | None = None,
        body: Any = None,
        headers: httpx.Headers | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.errors = errors if errors is not None else [message]
        self.body = body
        self.headers = headers or httpx.Headers()

    def __str__(self) -> str:
        return f"{self.status_code}: {self.message}" if self.status_code else self.message

    @classmethod
    def from_response(cls, response: httpx.Response) -> APIError:
        try:
            body: Any = response.json()
        except ValueError:
            body = response.text
        errors = _messages(body) or [response.reason_phrase or f"HTTP {response.status_code}"]
        message = body.get("error") if isinstance(body, dict) else None
        return cls(
            message if isinstance(message, str) else errors[0],
            status_code=response.status_code,
            errors=errors,
            body=body,
            headers=response.headers,
        )


class APIConnectionError(APIError):
    """The request got no answer (after the retries)."""


def _messages(body: Any) -> list[str]:
    """Messages of any family's shape: ``errors: [str]``, ``error: str``, ``detail: str`` or the
    validation list ``detail: [{loc, msg, type}]``."""
    if not isinstance(body, dict):
        return []
    if isinstance(body.get("errors"), list):
        return [str(e) for e in body["errors"]]
    if isinstance(body.get("error"), str):
        return [body["error"]]
    detail = body.get("detail")
    if isinstance(detail, str):
        return [detail]
    if isinstance(detail, list):
        out = []
        for item in detail:
            if isinstance(item, dict):
                loc = ".".join(str(p) for p in item.get("loc", [])[1:] or item.get("loc", []))
                out.append(f"{loc}: {item.get('msg')}" if loc else str(item.get("msg")))
        return out
    return []
