"""A function tool against hostile endpoints (docs/tools.md): a real local HTTP receiver and the
real guarded client; whatever the endpoint does, the brain gets a short result or error and
nothing waits past the deadline."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson
import pytest
from callplane_client.webhooks import verify
from standardwebhooks.webhooks import Webhook

from callplane.brain import ToolCall
from callplane.tools import ToolContext
from callplane.tools.function import MAX_RESPONSE_BYTES
from callplane.tools.toolbox import Toolbox, ToolUse
from callplane.webhooks.network import webhook_transport
from callplane.webhooks.signing import new_secret
from tests.fakes import FakeConnection
from tests.webhook_receiver import Reply, receiver

SECRET = new_secret()


@asynccontextmanager
async def tool_client(allow_private: bool = True) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        transport=webhook_transport(allow_private), timeout=30, follow_redirects=False
    ) as client:
        yield client


async def use(
    url: str,
    arguments: dict[str, Any] | None = None,
    *,
    allow_private: bool = True,
    secret: str | None = SECRET,
    carts: list[dict[str, Any]] | None = None,
) -> ToolUse:
    config = {
        "type": "function",
        "name": "lookup",
        "url": url,
        "timeout_seconds": 1,
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
    box = Toolbox.from_configs([config])

    async def set_cart(cart: dict[str, Any]) -> None:
        (carts if carts is not None else []).append(cart)

    async with tool_client(allow_private) as http:
        context = ToolContext(
            connection=FakeConnection(),
            call={"id": "c-1"},
            http=http,
            tools_secret=secret,
            set_cart=set_cart,
        )
        return await box.use(ToolCall("lookup", arguments or {"q": "x"}), context)


async def test_a_text_answer_is_the_result_and_the_request_verifies() -> None:
    async with receiver(lambda _n: Reply(body=b"It is sunny.")) as endpoint:
        result = await use(endpoint.url, {"q": "weather"})
    assert (result.outcome, result.text) == ("ok", "It is sunny.")
    [request] = endpoint.received
    assert request.headers["content-type"] == "application/json"
    payload = Webhook(SECRET).verify(request.body, request.headers)
    assert payload == {
        "type": "tool.call",
        "tool": "lookup",
        "arguments": {"q": "weather"},
        "call": {"id": "c-1"},
    }
    # The Python client's helper verifies tool calls as it verifies webhooks.
    assert verify(request.body, request.headers, SECRET) == payload


async def test_a_json_answer_holding_a_cart_sets_it() -> None:
    cart = {"value": 3, "checkout": {"order_ids": ["a"]}}
    carts: list[dict[str, Any]] = []
    body = orjson.dumps({"ok": True, "cart": cart})
    async with receiver(lambda _n: Reply(body=body)) as endpoint:
        result = await use(endpoint.url, carts=carts)
    assert result.outcome == "ok" and orjson.loads(result.text)["ok"] is True
    assert carts == [cart]


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        (Reply(status=500, body=b"oops"), "the endpoint answered HTTP 500"),
        (
            Reply(status=302, headers={"location": "http://127.0.0.1:1/admin"}),
            "the endpoint answered HTTP 302",
        ),
        (
            Reply(body=b"x" * (50 * 1024 * 1024)),
            f"the endpoint's answer is larger than {MAX_RESPONSE_BYTES} bytes",
        ),
    ],
    ids=["500", "redirect", "50MB"],
)
async def test_an_endpoint_failing_is_an_error_for_the_brain(reply: Reply, says: str) -> None:
    async with receiver(lambda _n: reply) as endpoint:
        result = await use(endpoint.url)
    assert result.outcome == "error"
    assert orjson.loads(result.text) == {"error": says}
    assert len(endpoint.received) == 1  # the redirect was not followed


async def test_an_endpoint_that_hangs_times_out() -> None:
    async with receiver(lambda _n: Reply(delay=30)) as endpoint:
        result = await use(endpoint.url)
    assert result.outcome == "timeout"
    assert orjson.loads(result.text) == {"error": "no result within 1 s"}


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9/x", "http://10.0.0.1/x", "http://169.254.169.254/latest"]
)
async def test_a_private_loopback_or_metadata_address_is_refused_at_connect_time(url: str) -> None:
    result = await use(url, allow_private=False)
    assert result.outcome == "error"
    assert orjson.loads(result.text) == {"error": "the endpoint's address is not allowed"}


async def test_a_name_resolving_to_loopback_is_refused_too() -> None:
    async with receiver() as endpoint:
        result = await use(f"http://localhost:{endpoint.port}/hooks", allow_private=False)
    assert orjson.loads(result.text) == {"error": "the endpoint's address is not allowed"}
    assert endpoint.received == []


async def test_without_a_tools_secret_nothing_is_sent() -> None:
    async with receiver() as endpoint:
        result = await use(endpoint.url, secret=None)
    assert result.outcome == "error" and "not available" in result.text
    assert endpoint.received == []


async def test_a_megabyte_of_arguments_is_refused_before_any_request() -> None:
    async with receiver() as endpoint:
        result = await use(endpoint.url, {"q": "x" * 1_000_000})
    assert result.outcome == "invalid_arguments"
    assert endpoint.received == []
    await asyncio.sleep(0)
