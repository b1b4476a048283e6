"""Serving the metrics: ``GET /metrics`` on the API, or a listener of its own (workers).

Not public by default. The API answers ``/metrics`` only with ``Authorization: Bearer
<CALLPLANE_METRICS_TOKEN>`` (404 without a token configured, 401 with a wrong one); a process
with ``CALLPLANE_METRICS_LISTEN`` (``host:port``) serves them there too, to whoever reaches that
address (keep it on a private interface), and with the token when one is set.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime

from fastapi import FastAPI, Request, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector
from sqlalchemy import func, select

from callplane.errors import NotFound, Unauthorized
from callplane.kit.tenancy import across_organizations
from callplane.models.base import utcnow
from callplane.models.calls import Call
from callplane.models.webhooks import WebhookJob
from callplane.observability.metrics import SCRAPE_GAUGES
from callplane.runtime import Runtime

log = logging.getLogger("callplane.metrics")

CONTENT_TYPE = CONTENT_TYPE_LATEST


def authorized(token: str | None, authorization: str | None) -> bool:
    if not token:
        return False
    expected = f"Bearer {token}".encode()
    return hmac.compare_digest(expected, (authorization or "").encode())


class _Snapshot(Collector):
    def __init__(self, values: dict[str, float]) -> None:
        self.values = values

    def collect(self) -> list[GaugeMetricFamily]:
        return [
            GaugeMetricFamily(name, SCRAPE_GAUGES[name], value=value)
            for name, value in self.values.items()
        ]


async def scrape_gauges(runtime: Runtime) -> dict[str, float]:
    """The queue's state, from the database (three index lookups on calls and webhook jobs)."""
    now = utcnow()
    async with runtime.db.session(write=False) as session:
        queued = await session.scalar(
            across_organizations(
                select(func.count()).select_from(Call).where(Call.status == "enqueued"),
                "a platform-wide gauge: no organization is named in it",
            )
        )
        oldest_dialing = await session.scalar(
            across_organizations(
                select(func.min(Call.created_at)).where(Call.status == "dialing"),
                "a platform-wide gauge: no organization is named in it",
            )
        )
        oldest_due = await session.scalar(
            across_organizations(
                select(func.min(WebhookJob.due_at)),
                "a platform-wide gauge: no organization is named in it",
            )
        )
    return {
        "callplane_calls_queued": float(queued or 0),
        "callplane_calls_dialing_oldest_seconds": _age(now, oldest_dialing),
        "callplane_webhook_backlog_age_seconds": _age(now, oldest_due),
    }


def _age(now: datetime, then: datetime | None) -> float:
    return max(0.0, (now - then).total_seconds()) if then is not None else 0.0


async def render(runtime: Runtime | None) -> bytes:
    """The exposition text: every process's values in multiprocess mode, this one's otherwise,
    and the database gauges when a runtime is given (and the database answers)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    else:
        registry = CollectorRegistry()
        registry.register(_Everything())
    if runtime is not None:
        try:
            registry.register(_Snapshot(await scrape_gauges(runtime)))
        except Exception:
            log.warning("the database gauges could not be read", exc_info=True)
    return generate_latest(registry)


class _Everything(Collector):
    """The process's default registry, inside a registry that can take the snapshot too."""

    def collect(self):  # type: ignore[no-untyped-def]
        return REGISTRY.collect()


# -- a listener of its own (CALLPLANE_METRICS_LISTEN) ------------------------------------------


def parse_listen(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"CALLPLANE_METRICS_LISTEN must be host:port, not {address!r}")
    return host.strip("[]"), int(port)


@contextlib.asynccontextmanager
async def metrics_listener(runtime: Runtime) -> AsyncIterator[None]:
    """``start_listener`` for the length of a block."""
    stop = await start_listener(runtime)
    try:
        yield
    finally:
        await stop()


async def start_listener(runtime: Runtime) -> Callable[[], Awaitable[None]]:
    """Serve ``GET /metrics`` on CALLPLANE_METRICS_LISTEN (nothing when unset) until the
    returned function is awaited, which also marks this process gone for the live gauges. A
    deliberately tiny HTTP/1.0 server: one request per connection, no body read."""
    address = runtime.settings.metrics_listen
    server: asyncio.Server | None = None
    if address:
        host, port = parse_listen(address)
        token = runtime.settings.metrics_token

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
                status, body, kind = _answer(head, token)
                if status == 200:
                    body = await render(runtime)
                writer.write(
                    f"HTTP/1.0 {status} {_REASONS[status]}\r\ncontent-type: {kind}\r\n"
                    f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode()
                    + body
                )
                await writer.drain()
            except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                pass
            finally:
                writer.close()

        try:
            server = await asyncio.start_server(serve, host, port)
            log.info("metrics listening", extra={"address": address})
        except OSError as exc:
            # Another process of this host holds the address (``serve --workers N``): in
            # multiprocess mode it serves every process's totals, this one's included.
            log.warning(
                "metrics address unavailable", extra={"address": address, "error": str(exc)}
            )

    async def stop() -> None:
        if server is not None:
            server.close()
            await server.wait_closed()
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            multiprocess.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]

    return stop


_REASONS = {200: "OK", 401: "Unauthorized", 404: "Not Found"}


def _answer(head: bytes, token: str | None) -> tuple[int, bytes, str]:
    lines = head.decode("latin-1").split("\r\n")
    method, _, rest = lines[0].partition(" ")
    target = rest.partition(" ")[0]
    if method != "GET" or target.partition("?")[0] != "/metrics":
        return 404, b"not found\n", "text/plain"
    if token:
        authorization = next(
            (
                v.strip()
                for k, _, v in (ln.partition(":") for ln in lines[1:])
                if k.strip().lower() == "authorization"
            ),
            None,
        )
        if not authorized(token, authorization):
            return 401, b"unauthorized\n", "text/plain"
    return 200, b"", CONTENT_TYPE


def install(app: FastAPI, runtime: Runtime) -> None:
    """``GET /metrics`` on the API, only when CALLPLANE_METRICS_TOKEN is set (else a 404 saying
    how to turn it on); a wrong or missing token is a 401 in the STATUS shape."""
    token = runtime.settings.metrics_token
    if not token:

        @app.get("/metrics", include_in_schema=False)
        async def metrics_off() -> Response:
            raise NotFound(
                "Metrics are off: set CALLPLANE_METRICS_TOKEN and scrape /metrics with it "
                "as a Bearer token (or CALLPLANE_METRICS_LISTEN for a separate port)"
            )

        return

    @app.get("/metrics", include_in_schema=False)
    async def metrics(request: Request) -> Response:
        if not authorized(token, request.headers.get("authorization")):
            raise Unauthorized("A valid metrics token is required")
        return Response(await render(runtime), media_type=CONTENT_TYPE)
