"""A real HTTP receiver for webhook tests: an asyncio server on 127.0.0.1 (ephemeral port) that
records every request and answers as the test tells it to."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float


@dataclass
class Reply:
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b"ok"


@dataclass
class Receiver:
    port: int
    received: list[Received] = field(default_factory=list)
    #: Given the request number (1, 2, ...), what to answer.
    reply: Callable[[int], Reply] = lambda _n: Reply()
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    async def wait_for(self, count: int, within: float = 10.0) -> list[Received]:
        deadline = time.monotonic() + within
        while len(self.received) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{len(self.received)} of {count} webhooks arrived")
            self.arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.arrived.wait(), remaining)
        return self.received

    async def wait_for_event(self, type_: str, within: float = 10.0) -> Received:
        """The first request whose JSON body is an event of this type."""
        deadline = time.monotonic() + within
        while True:
            for request in self.received:
                if orjson.loads(request.body).get("type") == type_:
                    return request
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no {type_} webhook within {within} s")
            self.arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.arrived.wait(), remaining)


async def _serve(receiver: Receiver, reader: Any, writer: Any) -> None:
    try:
        while True:
            line = await reader.readline()
            if not line:
                return
            _method, path, _version = line.decode().split(" ", 2)
            headers: dict[str, str] = {}
            while (raw := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = raw.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            receiver.received.append(Received(path, headers, body, time.monotonic()))
            receiver.arrived.set()
            reply = receiver.reply(len(receiver.received))
            if reply.delay:
                await asyncio.sleep(reply.delay)
            extra = "".join(f"{k}: {v}\r\n" for k, v in reply.headers.items())
            head = f"HTTP/1.1 {reply.status} X\r\ncontent-length: {len(reply.body)}\r\n{extra}\r\n"
            writer.write(head.encode() + reply.body)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError, ValueError):
        return
    finally:
        writer.close()


@asynccontextmanager
async def receiver(reply: Callable[[int], Reply] | None = None) -> AsyncIterator[Receiver]:
    holder: list[Receiver] = []
    # Closing the server leaves its open keep-alive connections to the garbage collector (an
    # unclosed-socket warning in some later test): they are closed here on the way out.
    writers: set[Any] = set()

    async def serve(reader: Any, writer: Any) -> None:
        writers.add(writer)
        try:
            await _serve(holder[0], reader, writer)
        finally:
            writers.discard(writer)

    server = await asyncio.start_server(serve, host="127.0.0.1", port=0)
    port = server.sockets[0].getsockname()[1]
    rec = Receiver(port=port)
    if reply is not None:
        rec.reply = reply
    holder.append(rec)
    try:
        yield rec
    finally:
        server.close()
        for writer in list(writers):
            writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 1)
