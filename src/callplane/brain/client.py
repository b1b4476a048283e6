"""The agent's brain: any OpenAI-compatible chat-completions server (docs/engine-core.md).

One ``ChatCompletionsBrain`` per worker process (it holds an HTTP connection pool;
``engine/providers.py`` builds it). Two ways to ask:

- ``stream_reply``: a conversational turn, streamed (SSE) so the first sentence can be spoken while
  the rest is still being generated; yields ``TextDelta`` as text arrives and each ``ToolCall``
  once its arguments are complete.
- ``complete``: one whole answer (summaries, analyzers).

Every failure — the server unreachable, an HTTP error status, a malformed stream, no answer within
``CALLPLANE_LLM_TIMEOUT_SECONDS`` — is raised as ``BrainError``, so callers have one thing to catch
and never wait on a brain that has gone quiet.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
import orjson

from callplane.brain.base import BrainError, Message, ReplyEvent, TextDelta, ToolCall
from callplane.brain.sse import sse_data

if TYPE_CHECKING:
    from callplane.settings import Settings


@dataclass
class _PendingToolCall:
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def finish(self) -> ToolCall:
        raw = "".join(self.arguments).strip() or "{}"
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            parsed = {"raw": raw}
        # The transcript's ``arguments`` is an object (SPEC): anything else is wrapped.
        arguments = parsed if isinstance(parsed, dict) else {"value": parsed}
        return ToolCall(name=self.name, arguments=arguments, call_id=self.call_id)


class ChatCompletionsBrain:
    """A ``Brain`` (``base.py``) over an OpenAI-compatible chat-completions server."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        timeout_seconds: float = 20.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.model = model
        self.timeout_seconds = timeout_seconds
        # Bodies are serialised here (orjson), so httpx does not label them: servers built on
        # FastAPI (llama-cpp-python's, vLLM) read an unlabelled body as no JSON at all.
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/") + "/",
            headers=headers,
            timeout=httpx.Timeout(timeout_seconds),
            transport=transport,
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> ChatCompletionsBrain | None:
        """The configured brain, or ``None`` when ``CALLPLANE_LLM_BASE_URL`` is unset."""
        if not settings.llm_base_url:
            return None
        return cls(
            settings.llm_base_url,
            model=settings.llm_model,
            api_key=settings.llm_api_key,
            timeout_seconds=settings.llm_timeout_seconds,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    def _body(
        self,
        messages: Sequence[Message],
        model: str | None,
        temperature: float | None,
        **extra: Any,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"messages": list(messages), **extra}
        if model or self.model:
            body["model"] = model or self.model
        if temperature is not None:
            body["temperature"] = temperature
        return body

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        temperature: float | None = None,
    ) -> str:
        """The whole text of one answer."""
        try:
            async with asyncio.timeout(self.timeout_seconds):
                response = await self._http.post(
                    "chat/completions",
                    content=orjson.dumps(self._body(messages, model, temperature, stream=False)),
                )
        except TimeoutError:
            raise BrainError(f"no answer within {self.timeout_seconds:g} s") from None
        except httpx.HTTPError as exc:
            raise _unreachable(exc) from None
        _check_status(response.status_code, response.text)
        try:
            content = orjson.loads(response.content)["choices"][0]["message"]["content"]
        except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
            raise BrainError("the answer is not a chat completion") from None
        if not isinstance(content, str):
            raise BrainError("the answer has no text")
        return content

    async def stream_reply(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] = (),
        model: str | None = None,
        temperature: float | None = None,
    ) -> AsyncIterator[ReplyEvent]:
        """A conversational reply as it is generated; the whole reply shares one deadline.

        The deadline is applied to each wait for the server, never around a ``yield``: a timeout
        scope spanning a yield would cancel whatever the consumer is awaiting at that moment.
        """
        extra: dict[str, Any] = {"stream": True}
        if tools:
            extra["tools"] = list(tools)
        body = orjson.dumps(self._body(messages, model, temperature, **extra))
        deadline = asyncio.get_running_loop().time() + self.timeout_seconds
        try:
            request = self._http.build_request("POST", "chat/completions", content=body)
            async with asyncio.timeout_at(deadline):
                response = await self._http.send(request, stream=True)
            events = _reply_events(response)
            try:
                if response.status_code >= 400:
                    async with asyncio.timeout_at(deadline):
                        await response.aread()
                    _check_status(response.status_code, response.text)
                while True:
                    try:
                        async with asyncio.timeout_at(deadline):
                            event = await anext(events)
                    except StopAsyncIteration:
                        break
                    yield event
            finally:
                await events.aclose()
                await response.aclose()
        except TimeoutError:
            raise BrainError(f"no whole reply within {self.timeout_seconds:g} s") from None
        except httpx.HTTPError as exc:
            raise _unreachable(exc) from None


async def _reply_events(response: httpx.Response) -> AsyncGenerator[ReplyEvent, None]:
    pending: dict[int, _PendingToolCall] = {}
    finished = said = False
    async for data in sse_data(response.aiter_lines()):
        if data.strip() == "[DONE]":
            break
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise BrainError("the stream holds an event that is not JSON") from None
        if not isinstance(chunk, dict):
            raise BrainError("the stream holds an event that is not a JSON object")
        if "error" in chunk:
            raise BrainError(f"the server reported an error: {_short(str(chunk['error']))}")
        for choice in chunk.get("choices") or ():
            finished = finished or bool(choice.get("finish_reason"))
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if isinstance(text, str) and text:
                said = True
                yield TextDelta(text)
            for part in delta.get("tool_calls") or ():
                call = pending.setdefault(int(part.get("index", len(pending))), _PendingToolCall())
                call.call_id = part.get("id") or call.call_id
                function = part.get("function") or {}
                call.name = function.get("name") or call.name
                if function.get("arguments"):
                    call.arguments.append(function["arguments"])
    if not finished:
        # A reply the server dropped, not an empty one: llama-cpp-python's server ends a stream
        # with ``[DONE]`` alone when another request is waiting (its ``interrupt_requests``).
        # Before any text, asking again costs the caller nothing they heard.
        raise BrainError(
            "the stream ended before the reply was finished (no finish_reason)",
            retryable=not said,
        )
    for index in sorted(pending):
        if pending[index].name:
            yield pending[index].finish()


#: The server is there but busy or its upstream is: worth one more try.
BUSY_STATUSES = frozenset({502, 503, 504})


def _check_status(status: int, text: str) -> None:
    if status >= 400:
        raise BrainError(
            f"the server answered HTTP {status}: {_short(text)}",
            retryable=status in BUSY_STATUSES,
        )


def _unreachable(exc: httpx.HTTPError) -> BrainError:
    if isinstance(exc, httpx.TimeoutException):
        # Asking again would double the wait the caller already had.
        return BrainError(f"timed out ({type(exc).__name__})")
    detail = f"{type(exc).__name__}: {_short(str(exc))}"
    # Only a connection never made is surely unanswered; a stream cut midway is not retried.
    return BrainError(
        f"could not reach the server ({detail})", retryable=isinstance(exc, httpx.ConnectError)
    )


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
