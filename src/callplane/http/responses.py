"""Fast JSON responses: pydantic's Rust serializer for wire models, orjson for plain data."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
from pydantic import BaseModel
from starlette.responses import JSONResponse as StarletteJSONResponse
from starlette.responses import Response

_ORJSON_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS


def dumps(content: Any) -> bytes:
    if isinstance(content, BaseModel):
        return content.__pydantic_serializer__.to_json(content)
    if isinstance(content, list) and content and isinstance(content[0], BaseModel):
        return b"[" + b",".join(m.__pydantic_serializer__.to_json(m) for m in content) + b"]"
    return orjson.dumps(content, option=_ORJSON_OPTIONS, default=_default)


def _default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, uuid.UUID):  # asyncpg returns a UUID subclass that orjson refuses
        return str(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


class JSONResponse(StarletteJSONResponse):
    def render(self, content: Any) -> bytes:
        return dumps(content)


def json_response(
    content: Any, status_code: int = 200, headers: dict[str, str] | None = None
) -> Response:
    return Response(dumps(content), status_code, headers, media_type="application/json")
