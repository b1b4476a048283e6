"""Writing webhook events: the outbox every domain uses (docs/api-contract.md#webhooks).

``emit`` writes the event and one job per subscribed endpoint in the caller's session, so the
event exists exactly when the change it reports is committed (a rolled-back change sends
nothing), and wakes the delivery workers after the commit. Delivery itself happens in workers
(``webhooks.delivery``), never in the request or the call that caused the event.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.kit import wakeups
from callplane.kit.tenancy import across_organizations
from callplane.models.base import utcnow
from callplane.models.webhooks import WebhookEndpoint, WebhookEvent, WebhookJob

EVENT_TYPES = (
    "call.dialing",
    "call.in_progress",
    "call.ended",
    "call.cancelled",
    "call.analyzed",
    "call.transferred",
    "external_call.transcribed",
    "external_call.error",
    "campaign.started",
    "campaign.paused",
    "campaign.completed",
    "webhook.test",
)

EventData = Mapping[str, Any] | Callable[[], Awaitable[Mapping[str, Any]]]


def _default(value: Any) -> Any:
    if isinstance(value, uuid.UUID):  # asyncpg's UUID subclass is not orjson's
        return str(value)
    raise TypeError


def event_body(type_: str, at: datetime, data: Mapping[str, Any]) -> str:
    """``{"type", "timestamp", "data"}``: the JSON text that is signed and sent."""
    return orjson.dumps(
        {"type": type_, "timestamp": at, "data": data},
        default=_default,
        option=orjson.OPT_UTC_Z,
    ).decode()


@dataclass(frozen=True)
class Subscriber:
    """What the outbox needs of an enabled endpoint."""

    id: uuid.UUID
    events: list[str] | None


def subscribes(endpoint: WebhookEndpoint | Subscriber, type_: str) -> bool:
    # webhook.test goes only to the endpoint it tests (``only``), never by subscription.
    if type_ == "webhook.test":
        return False
    return endpoint.events is None or type_ in endpoint.events


async def emit(
    session: AsyncSession,
    organization_id: int,
    type_: str,
    data: EventData,
    *,
    only: uuid.UUID | None = None,
    ordering: tuple[str, int] | None = None,
) -> uuid.UUID | None:
    """Send event ``type_`` to the organization's subscribed endpoints; returns its event id.

    ``data`` may be an async callable, called only when some endpoint subscribes (building a
    full Call costs queries). Nothing is written, and None returned, when none does. ``only``
    sends to that one endpoint whatever it subscribes to (the test event). ``ordering``
    (key, position) makes events of one key reach each endpoint in position order (a call's
    events: its id and sequence).
    """
    if type_ not in EVENT_TYPES:
        raise ValueError(f"unknown webhook event type {type_!r}")
    query = select(WebhookEndpoint).where(
        WebhookEndpoint.organization_id == organization_id, WebhookEndpoint.enabled.is_(True)
    )
    if only is not None:
        query = query.where(WebhookEndpoint.id == only)
    endpoints = [
        e for e in (await session.scalars(query)).all() if only is not None or subscribes(e, type_)
    ]
    if not endpoints:
        return None
    payload = data if isinstance(data, Mapping) else await data()
    now = utcnow()
    event = WebhookEvent(
        organization_id=organization_id,
        id=uuid.uuid4(),
        type=type_,
        body=event_body(type_, now, payload),
        created_at=now,
    )
    session.add(event)
    await session.flush()
    session.add_all(
        WebhookJob(
            organization_id=organization_id,
            id=uuid.uuid4(),
            endpoint_id=endpoint.id,
            event_id=event.id,
            attempt=1,
            due_at=now,
            retries=True,
            ordering_key=ordering[0] if ordering else None,
            position=ordering[1] if ordering else 0,
        )
        for endpoint in endpoints
    )
    await session.flush()
    await wakeups.announce(session, wakeups.WEBHOOKS)
    return event.id


@dataclass(frozen=True)
class OutboxEntry:
    """One event for ``emit_many``: its payload and the endpoints it goes to."""

    organization_id: int
    type: str
    data: Mapping[str, Any]
    endpoints: Sequence[Subscriber]
    ordering: tuple[str, int] | None = None


async def subscribers(
    session: AsyncSession, organization_ids: Iterable[int]
) -> dict[int, list[Subscriber]]:
    """The enabled endpoints of many organizations, in one query (the engine moves calls of
    many organizations in one transaction)."""
    wanted = sorted(set(organization_ids))
    found: dict[int, list[Subscriber]] = {org: [] for org in wanted}
    if not wanted:
        return found
    rows = await session.execute(
        across_organizations(
            select(WebhookEndpoint.organization_id, WebhookEndpoint.id, WebhookEndpoint.events)
            .where(WebhookEndpoint.organization_id.in_(wanted), WebhookEndpoint.enabled.is_(True))
            .order_by(WebhookEndpoint.organization_id, WebhookEndpoint.created_at),
            "the engine writes the events of a batch of calls, named by their organizations",
        )
    )
    for org, endpoint_id, events in rows:
        found[org].append(Subscriber(endpoint_id, events))
    return found


async def emit_many(session: AsyncSession, entries: Sequence[OutboxEntry]) -> None:
    """Write many events and their jobs with two multi-row INSERTs (what ``emit`` does for
    one); entries without endpoints write nothing."""
    now = utcnow()
    events: list[dict[str, Any]] = []
    jobs: list[dict[str, Any]] = []
    for entry in entries:
        if entry.type not in EVENT_TYPES:
            raise ValueError(f"unknown webhook event type {entry.type!r}")
        if not entry.endpoints:
            continue
        event_id = uuid.uuid4()
        events.append(
            {
                "organization_id": entry.organization_id,
                "id": event_id,
                "type": entry.type,
                "body": event_body(entry.type, now, entry.data),
                "created_at": now,
            }
        )
        jobs.extend(
            {
                "organization_id": entry.organization_id,
                "id": uuid.uuid4(),
                "endpoint_id": endpoint.id,
                "event_id": event_id,
                "attempt": 1,
                "first_attempt_at": None,
                "due_at": now,
                "locked_until": None,
                "retries": True,
                "ordering_key": entry.ordering[0] if entry.ordering else None,
                "position": entry.ordering[1] if entry.ordering else 0,
            }
            for endpoint in entry.endpoints
        )
    if not events:
        return
    await session.execute(insert(WebhookEvent), events)
    await session.execute(insert(WebhookJob), jobs)
    await wakeups.announce(session, wakeups.WEBHOOKS)
