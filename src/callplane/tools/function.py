"""``function``: the organization's own HTTP endpoint, called as a signed webhook.

A ``POST`` of ``{"type": "tool.call", "tool", "arguments", "call": {...}}`` signed with the
agent's ``tools_secret`` (Standard Webhooks, ``webhooks.signing``: a receiver verifies it as it
verifies webhooks). The client ``ToolContext.http`` enforces webhooks' network rule at connect
time (``webhooks.network``); redirects are not followed; a 2xx body of at most 16 KB (JSON or
text) is the result, and a JSON result holding ``cart`` sets the call's cart.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import httpx
import jsonschema
import orjson
from pydantic import AfterValidator, Field, StringConstraints

from callplane.kit.schemas import SafeStr
from callplane.models.base import utcnow
from callplane.settings import Settings
from callplane.tools import Tool, ToolContext, ToolError, ToolResult
from callplane.tools.config import Text, ToolConfig
from callplane.webhooks.network import BlockedAddress, webhook_transport
from callplane.webhooks.signing import signed_headers

MAX_RESPONSE_BYTES = 16 * 1024
DEFAULT_TIMEOUT_SECONDS = 10.0
#: The range of docs/tools.md (the API refuses others; an old commit is held to it here).
MIN_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS = 1.0, 30.0
MAX_PARAMETERS_BYTES = 16 * 1024


def _http_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http or https URL")
    return value


def _json_schema(value: dict[str, Any]) -> dict[str, Any]:
    if len(orjson.dumps(value)) > MAX_PARAMETERS_BYTES:
        raise ValueError(f"must be at most {MAX_PARAMETERS_BYTES} bytes")
    if value.get("type", "object") != "object":
        raise ValueError('must be a JSON Schema of type "object"')
    try:
        jsonschema.Draft202012Validator.check_schema(value)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        raise ValueError(
            f"is not a valid JSON Schema{f' at {where}' if where else ''}: {exc.message[:200]}"
        ) from None
    return value


class FunctionConfig(ToolConfig):
    type: Literal["function"]
    url: Annotated[SafeStr, StringConstraints(max_length=2048), AfterValidator(_http_url)]
    parameters: Annotated[dict[str, Any], AfterValidator(_json_schema)] = {"type": "object"}
    timeout_seconds: Annotated[int, Field(ge=1, le=30)] = 10
    speak_while_running: Text | None = None


def function_tool_client(settings: Settings) -> httpx.AsyncClient:
    """The client function tools post with, on a call or in a text conversation: webhooks'
    network rule (and its loopback setting) checked at connect time, no redirects."""
    return httpx.AsyncClient(
        transport=webhook_transport(
            settings.webhook_allow_private_networks, allow_loopback=settings.webhook_allow_loopback
        ),
        timeout=httpx.Timeout(MAX_TIMEOUT_SECONDS),
        follow_redirects=False,
        trust_env=False,
    )


class FunctionTool(Tool):
    config_model = FunctionConfig

    @property
    def timeout_seconds(self) -> float:
        seconds = float(self.config.get("timeout_seconds") or DEFAULT_TIMEOUT_SECONDS)
        return min(max(seconds, MIN_TIMEOUT_SECONDS), MAX_TIMEOUT_SECONDS)

    @property
    def speak_while_running(self) -> str | None:
        line = self.config.get("speak_while_running")
        return str(line) if line else None

    def parameters(self) -> dict[str, Any]:
        parameters = self.config.get("parameters")
        return dict(parameters) if isinstance(parameters, dict) else {"type": "object"}

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        if context.http is None or not context.tools_secret:
            raise ToolError("function tools are not available on this call")
        payload = {
            "type": "tool.call",
            "tool": self.name,
            "arguments": arguments,
            "call": dict(context.call),
        }
        body = orjson.dumps(payload, default=str).decode()
        headers = signed_headers(context.tools_secret, f"tool_{uuid.uuid4().hex}", utcnow(), body)
        headers["content-type"] = "application/json"
        request = context.http.build_request(
            "POST", str(self.config.get("url")), content=body, headers=headers
        )
        try:
            response = await context.http.send(request, stream=True, follow_redirects=False)
        except httpx.HTTPError as exc:
            # httpx wraps the guard's refusal (raised inside the connection) in a ConnectError.
            if isinstance(exc.__cause__, BlockedAddress):
                raise ToolError("the endpoint's address is not allowed") from None
            raise ToolError(f"the endpoint could not be reached ({type(exc).__name__})") from None
        try:
            if not 200 <= response.status_code < 300:
                raise ToolError(f"the endpoint answered HTTP {response.status_code}")
            content = await _capped(response)
        finally:
            await response.aclose()
        return ToolResult(await _result(content, context))


async def _capped(response: httpx.Response) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw():
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise ToolError(f"the endpoint's answer is larger than {MAX_RESPONSE_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def _result(content: bytes, context: ToolContext) -> Any:
    try:
        result = orjson.loads(content) if content.strip() else ""
    except orjson.JSONDecodeError:
        return content.decode("utf-8", "replace")
    if isinstance(result, dict) and isinstance(result.get("cart"), dict):
        await context.set_cart(result["cart"])
    return result
