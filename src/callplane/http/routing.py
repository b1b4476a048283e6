"""Routers that declare their error family, and the route class that enforces it.

``family_router(STATUS, prefix="/contacts")`` gives an APIRouter whose routes render every error
in the STATUS shape and document those shapes in OpenAPI. The route class also bounds the size
of request bodies before FastAPI reads them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import orjson
from fastapi import APIRouter, HTTPException
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from sqlalchemy.exc import OperationalError
from starlette.requests import Request
from starlette.responses import Response

from callplane.errors import CallplaneError, InvalidInput, PayloadTooLarge, Unavailable
from callplane.http.deps import UNIT_OF_WORK, end_unit_of_work
from callplane.http.families import ErrorFamily, Rendered, render_error, render_validation
from callplane.http.responses import JSONResponse, json_response

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_STREAMED_BODY = "__callplane_streamed_body__"

EndpointT = TypeVar("EndpointT", bound=Callable[..., Any])


def streamed_body(endpoint: EndpointT) -> EndpointT:
    """Mark an endpoint that reads its own raw body (``request.stream()``, e.g. an audio upload):
    the route class then leaves the body alone instead of applying the JSON body policy."""
    setattr(endpoint, _STREAMED_BODY, True)
    return endpoint


async def _enforce_body_limit(request: Request) -> bool:
    """Refuse bodies over CALLPLANE_MAX_BODY_BYTES; True when the request has a body."""
    limit: int = request.app.state.runtime.settings.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise PayloadTooLarge("Invalid Content-Length")
        if int(declared) > limit:
            raise PayloadTooLarge(f"Request body exceeds {limit} bytes")
        return int(declared) > 0
    # Chunked upload: read it here, bounded, and hand the bytes to FastAPI's own body parsing.
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"Request body exceeds {limit} bytes")
        chunks.append(chunk)
    request._body = b"".join(chunks)
    return size > 0


def _require_json(request: Request) -> None:
    """A body sent as form data or text is a clear 422, not a confusing type error."""
    content_type = request.headers.get("content-type")
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


_LONG_INTEGER = re.compile(rb"[0-9]{19}")


def _parse_json(request: Request, body: bytes) -> None:
    """Parse a JSON body strictly, before FastAPI does, and hand it the result.

    orjson refuses what the stdlib parser lets through and databases then choke on (NaN and
    Infinity, lone surrogates, invalid UTF-8) and bounds nesting depth, so all of those are a
    422 here instead of a 500 or a 400 later. orjson reads integers beyond 64 bits as floats;
    bodies that may hold one are re-read by the stdlib parser, which keeps them exact.
    """
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        reason = "nested too deeply" if "depth" in str(exc) else "not valid JSON"
        raise InvalidInput(
            f"Request body is {reason}", loc=("body",), type_="json_invalid"
        ) from None
    if _LONG_INTEGER.search(body):
        parsed = json.loads(body)
    request._json = parsed


def _respond(rendered: Rendered) -> Response:
    return json_response(rendered.body, rendered.status_code, rendered.headers)


def family_route_class(family: ErrorFamily) -> type[APIRoute]:
    class FamilyRoute(APIRoute):
        error_family = family

        def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
            responses = family.openapi_responses()
            for code, extra in (kwargs.pop("responses", None) or {}).items():
                responses[code] = {**responses.get(code, {}), **extra}
            kwargs.setdefault("response_class", JSONResponse)
            super().__init__(path, endpoint, responses=responses, **kwargs)

        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()
            json_body = not getattr(self.endpoint, _STREAMED_BODY, False)

            async def handle(request: Request) -> Response:
                request.scope[UNIT_OF_WORK] = True
                try:
                    if (
                        json_body
                        and request.method in _BODY_METHODS
                        and await _enforce_body_limit(request)
                    ):
                        _require_json(request)
                        _parse_json(request, await request.body())
                    response = await handler(request)
                except CallplaneError as exc:
                    rendered = render_error(family, exc)
                except RequestValidationError as exc:
                    rendered = render_validation(family, list(exc.errors()))
                except HTTPException as exc:
                    if exc.status_code != 400:  # 400 is FastAPI's "error parsing the body"
                        await end_unit_of_work(request, commit=False)
                        raise
                    invalid = InvalidInput("Request body could not be parsed", type_="json_invalid")
                    rendered = render_error(family, invalid)
                except OperationalError as exc:
                    if "database is locked" not in str(exc.orig):
                        await end_unit_of_work(request, commit=False)
                        raise
                    rendered = render_error(family, Unavailable("Database busy, retry shortly"))
                except BaseException:
                    await end_unit_of_work(request, commit=False)
                    raise
                else:
                    await end_unit_of_work(request, commit=True)
                    return response
                await end_unit_of_work(request, commit=False)
                return _respond(rendered)

            return handle

    FamilyRoute.__name__ = f"{family.name.title()}Route"
    return FamilyRoute


def family_router(family: ErrorFamily, **kwargs: Any) -> APIRouter:
    return APIRouter(route_class=family_route_class(family), **kwargs)
