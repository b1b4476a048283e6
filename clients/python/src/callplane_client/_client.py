"""``Callplane`` (sync) and ``AsyncCallplane``: the resources of the API on one HTTP client."""

from __future__ import annotations

from types import TracebackType
from typing import Any

import httpx

from callplane_client import _resources as r
from callplane_client._agents import Agents
from callplane_client._campaigns import Campaigns, Suppressions
from callplane_client._governance import ApiKeys, AuditLog
from callplane_client._knowledge import KnowledgeBases
from callplane_client._transport import AsyncTransport, RetryPolicy, SyncTransport
from callplane_client._web_calls import WebCalls

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=10.0)
_USER_AGENT = "callplane-client-python/0.1.0"


class _Resources:
    voices: r.Voices
    call_tags: r.CallTags
    numbers: r.Numbers
    calls: r.Calls
    contacts: r.Contacts
    data: r.Data
    feedback: r.Feedback
    external_calls: r.ExternalCalls
    webhooks: r.Webhooks
    agents: Agents
    web_calls: WebCalls
    campaigns: Campaigns
    suppressions: Suppressions
    knowledge_bases: KnowledgeBases
    api_keys: ApiKeys
    audit_log: AuditLog

    def _attach(self, send: Any, is_async: bool) -> None:
        self.voices = r.Voices(send, is_async)
        self.call_tags = r.CallTags(send, is_async)
        self.numbers = r.Numbers(send, is_async)
        self.calls = r.Calls(send, is_async)
        self.contacts = r.Contacts(send, is_async)
        self.data = r.Data(send, is_async)
        self.feedback = r.Feedback(send, is_async)
        self.external_calls = r.ExternalCalls(send, is_async)
        self.webhooks = r.Webhooks(send, is_async)
        self.agents = Agents(send, is_async)
        self.web_calls = WebCalls(send, is_async)
        self.campaigns = Campaigns(send, is_async)
        self.suppressions = Suppressions(send, is_async)
        self.knowledge_bases = KnowledgeBases(send, is_async)
        self.api_keys = ApiKeys(send, is_async)
        self.audit_log = AuditLog(send, is_async)


def _base(base_url: str) -> httpx.URL:
    """The server's address: with or without a trailing ``/v1`` (every path carries its own)."""
    base = base_url.rstrip("/")
    if base.endswith("/v1"):
        base = base[: -len("/v1")]
    return httpx.URL(base)


def _headers(api_key: str) -> dict[str, str]:
    if not api_key:
        raise ValueError("an API key is required (Callplane(api_key=...))")
    if not api_key.isascii() or not api_key.isprintable() or " " in api_key:
        # Else the HTTP layer refuses the header and it reads as the server not answering.
        raise ValueError(
            "the API key contains a space, a newline or another character no key has "
            "(copied with a line break? strip it: api_key.strip())"
        )
    return {"Authorization": f"Bearer {api_key}", "User-Agent": _USER_AGENT}


class Callplane(_Resources):
    """The API, synchronously::

        client = Callplane("cp_...", base_url="http://127.0.0.1:8000")
        call = client.calls.create("+14155550100", first_message="Hello!")

    ``http_client`` lets you bring your own ``httpx.Client`` (proxies, transports, event hooks);
    the key and base URL are set on it.
    """

    def __init__(
        self,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        *,
        max_retries: int = 2,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        http_client: httpx.Client | None = None,
    ) -> None:
        self._owns_client = http_client is None
        self._http = http_client or httpx.Client(timeout=timeout)
        self._http.base_url = _base(base_url)
        self._http.headers.update(_headers(api_key))
        self._transport = SyncTransport(self._http, RetryPolicy(max_retries=max_retries))
        self._attach(self._transport.send, is_async=False)

    def close(self) -> None:
        if self._owns_client:
            self._http.close()

    def __enter__(self) -> Callplane:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncCallplane(_Resources):
    """The API for asyncio: the same resources and methods as ``Callplane``, awaited
    (``await client.calls.get(id)``); ``iter`` methods are async iterators (``async for``)."""

    def __init__(
        self,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        *,
        max_retries: int = 2,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self._owns_client = http_client is None
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self._http.base_url = _base(base_url)
        self._http.headers.update(_headers(api_key))
        self._transport = AsyncTransport(self._http, RetryPolicy(max_retries=max_retries))
        self._attach(self._transport.send, is_async=True)

    async def aclose(self) -> None:
        if self._owns_client:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncCallplane:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
