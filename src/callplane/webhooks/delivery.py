"""Delivering webhook events from workers (docs/api-contract.md#webhooks): the DELIVERY worker task.

Each round takes due jobs (``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so workers share them) and
holds them for the timeout plus a margin (``locked_until``: a worker that dies lets them go).
Every attempt runs as its own task, bounded in total and per endpoint (a claim keeps no more of
an endpoint's jobs than its free slots), so a slow or dead receiver only ever occupies its own
few slots: calls and other receivers never wait for it. Requests share one pooled client
(keep-alive connections). Results are written in batches, with multi-row statements: one
delivery-log row per attempt, then the job is done (2xx, or no attempt left) or scheduled for the
next attempt of CALLPLANE_WEBHOOK_RETRY_SCHEDULE (seconds after the first try).

Requests are signed per Standard Webhooks, do not follow redirects (a 3xx is a failed attempt),
read at most ``RESPONSE_BYTES`` of the response, and go only to public addresses unless
CALLPLANE_WEBHOOK_ALLOW_PRIVATE_NETWORKS (``network.py``). Secrets and bodies are never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx
from sqlalchemy import and_, delete, exists, insert, or_, select, tuple_, update
from sqlalchemy.orm import aliased

from callplane.jobs import TaskContext, WorkerTask
from callplane.kit import wakeups
from callplane.kit.tenancy import across_organizations
from callplane.models.base import utcnow
from callplane.models.webhooks import WebhookDelivery, WebhookEndpoint, WebhookEvent, WebhookJob
from callplane.observability.metrics import count_webhook_attempt
from callplane.webhooks.network import webhook_transport
from callplane.webhooks.secrets import box_for
from callplane.webhooks.signing import signed_headers

log = logging.getLogger("callplane.webhooks.delivery")

CLAIM_BATCH = 200
MAX_IN_FLIGHT = 512
#: Attempts in flight per endpoint and worker: what one slow receiver can take.
PER_ENDPOINT = 64
#: Connection pools of a worker (see ``Deliverer``).
POOLS = 16
RESPONSE_BYTES = 4096
#: Held past the timeout before another worker may take a job whose worker vanished.
LOCK_MARGIN_SECONDS = 30.0
USER_AGENT = "callplane-webhooks/1"


@dataclass(frozen=True)
class _Job:
    organization_id: int
    id: uuid.UUID
    endpoint_id: uuid.UUID
    event_id: uuid.UUID
    event_type: str
    body: str
    url: str
    secret: str
    attempt: int
    first_attempt_at: datetime | None
    retries: bool


@dataclass(frozen=True)
class _Result:
    job: _Job
    at: datetime
    status_code: int | None
    error: str | None
    duration_ms: int

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


class Deliverer:
    """The webhook sender of one worker process."""

    def __init__(self, engine: TaskContext) -> None:
        self.engine = engine
        self.settings = engine.settings
        # Several pools, attempts spread round-robin: httpcore looks at every connection of a
        # pool for every request, so one pool of hundreds of connections costs more CPU than
        # the requests themselves.
        self.clients = [
            httpx.AsyncClient(
                transport=webhook_transport(
                    self.settings.webhook_allow_private_networks,
                    max_connections=MAX_IN_FLIGHT // POOLS,
                    allow_loopback=self.settings.webhook_allow_loopback,
                ),
                timeout=httpx.Timeout(self.settings.webhook_timeout_seconds),
                follow_redirects=False,
                trust_env=False,
            )
            for _ in range(POOLS)
        ]
        self._turn = 0
        self.in_flight: dict[uuid.UUID, int] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.results: list[_Result] = []
        self.results_ready = asyncio.Event()

    # -- taking jobs ---------------------------------------------------------------------

    async def step(self, engine: TaskContext) -> bool:
        room = MAX_IN_FLIGHT - len(self.tasks)
        if room <= 0:
            return False
        want = min(CLAIM_BATCH, room)
        jobs, more = await self._claim(want)
        for job in jobs:
            self.in_flight[job.endpoint_id] = self.in_flight.get(job.endpoint_id, 0) + 1
            task = asyncio.create_task(self._attempt(job))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        return more

    async def _claim(self, want: int) -> tuple[list[_Job], bool]:
        """Due jobs this worker may start now, and whether more may be waiting."""
        now = utcnow()
        busy = [e for e, n in self.in_flight.items() if n >= PER_ENDPOINT]
        earlier = aliased(WebhookJob)
        untried_earlier = exists().where(
            earlier.organization_id == WebhookJob.organization_id,
            earlier.endpoint_id == WebhookJob.endpoint_id,
            earlier.ordering_key == WebhookJob.ordering_key,
            earlier.position < WebhookJob.position,
            earlier.first_attempt_at.is_(None),
        )
        query = (
            select(WebhookJob, WebhookEvent.type, WebhookEvent.body, WebhookEndpoint)
            .join(
                WebhookEvent,
                and_(
                    WebhookEvent.organization_id == WebhookJob.organization_id,
                    WebhookEvent.id == WebhookJob.event_id,
                ),
            )
            .join(
                WebhookEndpoint,
                and_(
                    WebhookEndpoint.organization_id == WebhookJob.organization_id,
                    WebhookEndpoint.id == WebhookJob.endpoint_id,
                ),
            )
            .where(
                WebhookJob.due_at <= now,
                or_(WebhookJob.locked_until.is_(None), WebhookJob.locked_until < now),
                or_(WebhookJob.ordering_key.is_(None), ~untried_earlier),
            )
            .order_by(WebhookJob.due_at)
            .limit(want)
            .with_for_update(skip_locked=True, of=WebhookJob)
        )
        query = across_organizations(
            query, "the delivery worker sends every organization's due webhook jobs"
        )
        if busy:
            query = query.where(WebhookJob.endpoint_id.not_in(busy))
        hold_until = now + timedelta(
            seconds=self.settings.webhook_timeout_seconds + LOCK_MARGIN_SECONDS
        )
        async with self.engine.runtime.db.session(write=True) as session:
            rows = (await session.execute(query)).all()
            # An endpoint gets no more than its free slots: the rest stay locked only until this
            # transaction ends, for the next round or another worker (a slow receiver never
            # holds more than PER_ENDPOINT attempts of a worker).
            free = {e: PER_ENDPOINT - n for e, n in self.in_flight.items()}
            kept = []
            for row in rows:
                endpoint_id = row[0].endpoint_id
                if free.get(endpoint_id, PER_ENDPOINT) > 0:
                    free[endpoint_id] = free.get(endpoint_id, PER_ENDPOINT) - 1
                    kept.append(row)
            if not kept:
                await session.rollback()
                return [], False
            await session.execute(
                across_organizations(
                    update(WebhookJob)
                    .where(
                        tuple_(WebhookJob.organization_id, WebhookJob.id).in_(
                            [(job.organization_id, job.id) for job, *_ in kept]
                        )
                    )
                    .values(locked_until=hold_until)
                    .execution_options(synchronize_session=False),
                    "the delivery worker holds the jobs it locked, named by (organization, id)",
                )
            )
            await session.commit()
        box = box_for(await self.engine.runtime.signer.key.load(self.engine.runtime.db))
        jobs = [
            _Job(
                organization_id=job.organization_id,
                id=job.id,
                endpoint_id=job.endpoint_id,
                event_id=job.event_id,
                event_type=event_type,
                body=body,
                url=endpoint.url,
                secret=box.open(endpoint.secret, endpoint.id),
                attempt=job.attempt,
                first_attempt_at=job.first_attempt_at,
                retries=job.retries,
            )
            for job, event_type, body, endpoint in kept
        ]
        return jobs, len(rows) == want

    # -- one attempt ---------------------------------------------------------------------

    async def _attempt(self, job: _Job) -> None:
        at = utcnow()
        started = time.monotonic()
        status_code: int | None = None
        error: str | None = None
        try:
            async with asyncio.timeout(self.settings.webhook_timeout_seconds):
                status_code = await self._post(job, at)
            if not 200 <= status_code < 300:
                error = f"HTTP {status_code}"
        except TimeoutError:
            error = f"timed out after {self.settings.webhook_timeout_seconds:g} s"
        except httpx.HTTPError as exc:
            error = _describe(exc)
        except Exception as exc:  # never lose the attempt's row
            log.exception("webhook attempt crashed", extra={"event_id": str(job.event_id)})
            error = type(exc).__name__
        finally:
            self.in_flight[job.endpoint_id] -= 1
            if self.in_flight[job.endpoint_id] <= 0:
                del self.in_flight[job.endpoint_id]
            # A slot is free: take the next due job now, not after the results are written.
            wakeups.local.wake(wakeups.WEBHOOKS)
        duration_ms = int((time.monotonic() - started) * 1000)
        self.results.append(_Result(job, at, status_code, error, duration_ms))
        self.results_ready.set()

    async def _post(self, job: _Job, at: datetime) -> int:
        headers = signed_headers(job.secret, str(job.event_id), at, job.body)
        headers["content-type"] = "application/json"
        headers["user-agent"] = USER_AGENT
        self._turn = (self._turn + 1) % POOLS
        async with self.clients[self._turn].stream(
            "POST", job.url, content=job.body.encode(), headers=headers
        ) as response:
            read = 0
            async for chunk in response.aiter_raw():
                read += len(chunk)
                if read >= RESPONSE_BYTES:
                    break  # the rest is not wanted: closing drops the connection
            return response.status_code

    # -- recording results ---------------------------------------------------------------

    async def flush(self) -> None:
        results, self.results = self.results, []
        self.results_ready.clear()
        if not results:
            return
        delays = self.settings.webhook_retry_delays
        log_rows: list[dict[str, object]] = []
        finished: list[tuple[int, uuid.UUID]] = []
        again: list[tuple[_Job, datetime, datetime]] = []
        for result in results:
            job = result.job
            first = job.first_attempt_at or result.at
            next_at: datetime | None = None
            if not result.delivered and job.retries and job.attempt < len(delays):
                next_at = max(first + timedelta(seconds=delays[job.attempt]), result.at)
            count_webhook_attempt(
                result.status_code, result.duration_ms, result.at, next_at is None
            )
            log_rows.append(
                {
                    "organization_id": job.organization_id,
                    "id": uuid.uuid4(),
                    "endpoint_id": job.endpoint_id,
                    "event_id": job.event_id,
                    "event_type": job.event_type,
                    "attempt": job.attempt,
                    "status_code": result.status_code,
                    "error": result.error,
                    "duration_ms": result.duration_ms,
                    "created_at": result.at,
                    "next_attempt_at": next_at,
                    "delivered": result.delivered,
                }
            )
            if next_at is None:
                finished.append((job.organization_id, job.id))
            else:
                again.append((job, first, next_at))
        # One INSERT for the log, one DELETE for the finished jobs; retries (rare) one by one.
        async with self.engine.runtime.db.session(write=True) as session:
            await session.execute(insert(WebhookDelivery), log_rows)
            if finished:
                await session.execute(
                    across_organizations(
                        delete(WebhookJob).where(
                            tuple_(WebhookJob.organization_id, WebhookJob.id).in_(finished)
                        ),
                        "the delivery worker ends the jobs it tried, named by (organization, id)",
                    )
                )
            for job, first, next_at in again:
                await session.execute(
                    update(WebhookJob)
                    .where(
                        WebhookJob.organization_id == job.organization_id,
                        WebhookJob.id == job.id,
                    )
                    .values(
                        attempt=job.attempt + 1,
                        first_attempt_at=first,
                        due_at=next_at,
                        locked_until=None,
                    )
                    .execution_options(synchronize_session=False)
                )
            await session.commit()
        # Later events of the same calls may now go; retries may be due soon.
        wakeups.local.wake(wakeups.WEBHOOKS)

    async def flush_forever(self) -> None:
        while not self.engine.stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.results_ready.wait(), 1.0)
            try:
                await self.flush()
            except Exception:
                log.exception("recording webhook attempts failed; retrying")
                await asyncio.sleep(0.5)

    async def close(self) -> None:
        if self.tasks:
            await asyncio.wait(set(self.tasks), timeout=self.settings.webhook_timeout_seconds)
        for task in list(self.tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            await self.flush()
        for client in self.clients:
            await client.aclose()


def _describe(exc: httpx.HTTPError) -> str:
    """What went wrong, without the URL's query or any header (they may carry secrets)."""
    message = str(exc).split("\n")[0][:200]
    kind = type(exc).__name__
    return f"{kind}: {message}" if message else kind


async def _run(engine: TaskContext) -> None:
    deliverer = Deliverer(engine)
    flusher = asyncio.create_task(deliverer.flush_forever())
    try:
        await engine.repeat(
            deliverer.step,
            interval=engine.settings.worker_poll_seconds,
            wake_on=wakeups.WEBHOOKS,
        )
    finally:
        flusher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await flusher
        await deliverer.close()


DELIVERY = WorkerTask("webhook-delivery", _run)
