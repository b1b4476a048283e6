"""The body policy of every JSON route, in one place: size, content type, strict parse, depth.

A family route (``http.routing``) hands each POST/PUT/PATCH request to ``police_body`` before
FastAPI sees it. The body is read once, through the public ``request.stream()``, bounded by
``CALLPLANE_MAX_BODY_BYTES`` (413); its Content-Type must be JSON (``application/json`` or
``application/*+json``) — a body sent without any Content-Type is read as JSON, the same on
every route; it is parsed under the JSON value policy of ``callplane.kit.jsonvalues`` (422 naming
the field). The handler then gets a ``PolicedRequest``, whose ``body()`` and ``json()`` return
what was read, so FastAPI and endpoints that read the request themselves see the same document.

Endpoints marked ``@streamed_body`` (an audio upload) are left alone: they read
``request.stream()`` themselves and bound it themselves.

The dashboard's forms (urlencoded, or multipart where a page takes a file) are bounded by the
same rule, ``check_declared`` then ``bounded_receive`` under the parser: a body is refused
(413) once it passes its limit, as declared or as sent, never read whole first.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.types import Message, Receive

from callplane.errors import InvalidInput, PayloadTooLarge
from callplane.kit import jsonvalues

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


@dataclass(frozen=True)
class BodyPolicy:
    """What an endpoint asks of the policy (``http.routing.streamed_body`` and
    ``exact_json_text`` set it)."""

    #: False for an endpoint that reads and bounds ``request.stream()`` itself
    applies: bool = True
    #: see ``http.routing.exact_json_text``
    exact_text: bool = False


class PolicedRequest(Request):
    """A request whose body was read and parsed under the policy."""

    def __init__(self, request: Request, raw: bytes, document: Any) -> None:
        super().__init__(request.scope, request.receive)
        self.raw_body = raw
        self.document = document

    async def body(self) -> bytes:
        return self.raw_body

    async def json(self) -> Any:
        if not self.raw_body:
            raise InvalidInput("Request body is required", loc=("body",), type_="missing")
        return self.document

    async def stream(self) -> AsyncGenerator[bytes, None]:
        yield self.raw_body

    def replay(self) -> Receive:
        """An ASGI ``receive`` that hands on the body as it was received, for an app the
        request goes on to."""
        sent = False

        async def receive() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": self.raw_body, "more_body": False}
            return {"type": "http.disconnect"}

        return receive


def check_declared(request: Request, limit: int) -> None:
    """413 when the Content-Length is not a number or more than ``limit``."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise PayloadTooLarge("Invalid Content-Length")
        if int(declared) > limit:
            raise PayloadTooLarge(f"Request body exceeds {limit} bytes")


def bounded_receive(receive: Receive, limit: int) -> Receive:
    """``receive``, raising 413 as soon as the body it has handed on passes ``limit`` bytes: a
    parser reading through it (a multipart form) never holds more, whatever was declared."""
    size = 0

    async def bounded() -> Message:
        nonlocal size
        message = await receive()
        if message["type"] == "http.request":
            size += len(message.get("body", b""))
            if size > limit:
                raise PayloadTooLarge(f"Request body exceeds {limit} bytes")
        return message

    return bounded


async def read_bounded(request: Request, limit: int) -> bytes:
    """The body, or 413 once it passes ``limit`` bytes (declared or sent)."""
    check_declared(request, limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:  # a chunked body, or one longer than it declared
            raise PayloadTooLarge(f"Request body exceeds {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def require_json(content_type: str | None) -> None:
    """Form data or text is a clear 422; no Content-Type at all is read as JSON."""
    if not content_type:
        return
    media = content_type.split(";", 1)[0].strip().lower()
    if media != "application/json" and not (
        media.startswith("application/") and media.endswith("+json")
    ):
        raise InvalidInput(
            "Request body must be JSON (Content-Type: application/json)",
            loc=("body",),
            type_="content_type",
        )


async def police_body(request: Request, *, exact_text: bool = False) -> Request:
    """The request the handler sees: unchanged without a body method, else a PolicedRequest.
    ``exact_text``: see ``http.routing.exact_json_text``."""
    if request.method not in BODY_METHODS:
        return request
    limit: int = request.app.state.runtime.settings.max_body_bytes
    raw = await read_bounded(request, limit)
    if not raw.strip():
        return PolicedRequest(request, b"", None)
    require_json(request.headers.get("content-type"))
    return PolicedRequest(request, raw, jsonvalues.parse(raw, exact_text=exact_text))
