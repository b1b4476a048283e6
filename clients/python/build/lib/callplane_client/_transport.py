"""Sending a request: authentication, retries with backoff, and turning answers into results.

Retried (``max_retries`` times, 2 by default): 408, 429 and 5xx answers, which the server gives
before it changes anything, and requests that got no answer. A request that may have reached the
server without an answer is retried only when repeating it is safe: its method is idempotent, or
it carries an ``Idempotency-Key`` (``calls.create`` always sends one). The wait before retry n is
``Retry-After`` when the server sent one, else an exponential backoff with full jitter.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx

from callplane_client._errors import APIConnectionError, APIError

T = TypeVar("T")

RETRY_STATUSES = frozenset({408, 429})
_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
# No connection was made: the request cannot have reached the server, retrying is always safe.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass
class Request(Generic[T]):
    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    params: Any = None
    json: Any = None
    content: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class RetryPolicy:
    max_retries: int = 2
    backoff: float = 0.5  # first delay ceiling, seconds; doubles on every retry
    max_backoff: float = 8.0
    max_retry_after: float = 60.0  # never sleep longer than this on a server's word

    def should_retry_status(self, status: int) -> bool:
        return status in RETRY_STATUSES or status >= 500

    def may_resend(self, request: Request[Any], error: httpx.TransportError) -> bool:
        if isinstance(error, _NOT_SENT):
            return True
        return request.method in _IDEMPOTENT or "Idempotency-Key" in request.headers

    def delay(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            told = _retry_after(response.headers.get("retry-after"))
            if told is not None:
                return min(told, self.max_retry_after)
        return random.uniform(0, min(self.max_backoff, self.backoff * 2**attempt))


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def _result(request: Request[T], response: httpx.Response) -> T:
    if response.status_code >= 400:
        raise APIError.from_response(response)
    return request.parse(response)


def _build(client: httpx.Client | httpx.AsyncClient, request: Request[Any]) -> httpx.Request:
    return client.build_request(
        request.method,
        request.path,
        params=request.params,
        json=request.json,
        content=request.content,
        headers=request.headers,
    )


class SyncTransport:
    def __init__(self, client: httpx.Client, policy: RetryPolicy) -> None:
        self.client = client
        self.policy = policy

    def send(self, request: Request[T]) -> T:
        attempt = 0
        while True:
            try:
                response = self.client.send(_build(self.client, request))
            except httpx.TransportError as exc:
                if attempt >= self.policy.max_retries or not self.policy.may_resend(request, exc):
                    raise APIConnectionError(f"No answer from the API: {exc!r}") from exc
                time.sleep(self.policy.delay(attempt, None))
            else:
                if attempt >= self.policy.max_retries or not self.policy.should_retry_status(
                    response.status_code
                ):
                    return _result(request, response)
                time.sleep(self.policy.delay(attempt, response))
            attempt += 1


class AsyncTransport:
    def __init__(self, client: httpx.AsyncClient, policy: RetryPolicy) -> None:
        self.client = client
        self.policy = policy

    async def send(self, request: Request[T]) -> T:
        attempt = 0
        while True:
            try:
                response = await self.client.send(_build(self.client, request))
            except httpx.TransportError as exc:
                if attempt >= self.policy.max_retries or not self.policy.may_resend(request, exc):
                    raise APIConnectionError(f"No answer from the API: {exc!r}") from exc
                await asyncio.sleep(self.policy.delay(attempt, None))
            else:
                if attempt >= self.policy.max_retries or not self.policy.should_retry_status(
                    response.status_code
                ):
                    return _result(request, response)
                await asyncio.sleep(self.policy.delay(attempt, response))
            attempt += 1
