"""Webhook endpoints and their delivery log (docs/api-contract.md#webhooks). Services flush, never
commit."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.errors import InvalidInput, NotFound
from callplane.kit import wakeups
from callplane.kit.pagination import count, offset
from callplane.models.base import utcnow
from callplane.models.webhooks import WebhookDelivery, WebhookEndpoint, WebhookJob
from callplane.settings import Settings
from callplane.webhooks.events import EVENT_TYPES, emit
from callplane.webhooks.network import check_destination
from callplane.webhooks.schemas import WebhookCreate, WebhookUpdate
from callplane.webhooks.secrets import SecretBox
from callplane.webhooks.signing import new_secret

WEBHOOK_NOT_FOUND = "Webhook not found"
DELIVERY_NOT_FOUND = "Delivery not found"


def webhook_wire(endpoint: WebhookEndpoint, *, secret: str | None = None) -> dict[str, Any]:
    """The endpoint on the wire; ``secret`` (the plain one, known only at creation) is shown."""
    wire: dict[str, Any] = {
        "id": str(endpoint.id),
        "url": endpoint.url,
        "events": list(EVENT_TYPES) if endpoint.events is None else endpoint.events,
        "description": endpoint.description,
        "enabled": endpoint.enabled,
    }
    if secret is not None:
        wire["secret"] = secret
    wire["created_at"] = endpoint.created_at
    return wire


def delivery_wire(delivery: WebhookDelivery) -> dict[str, Any]:
    return {
        "id": str(delivery.id),
        "event_id": str(delivery.event_id),
        "type": delivery.event_type,
        "attempt": delivery.attempt,
        "status_code": delivery.status_code,
        "error": delivery.error,
        "duration_ms": delivery.duration_ms,
        "created_at": delivery.created_at,
        "next_attempt_at": delivery.next_attempt_at,
        "delivered": delivery.delivered,
    }


async def create_webhook(
    session: AsyncSession,
    settings: Settings,
    organization_id: int,
    body: WebhookCreate,
    box: SecretBox,
) -> tuple[WebhookEndpoint, str]:
    """The new endpoint and its secret in plain (stored sealed, ``webhooks.secrets``)."""
    await _check_destination(settings, body.url)
    now = utcnow()
    secret = new_secret()
    endpoint_id = uuid.uuid4()
    endpoint = WebhookEndpoint(
        organization_id=organization_id,
        id=endpoint_id,
        url=body.url,
        events=body.events,
        description=body.description,
        enabled=True,
        secret=box.seal(secret, endpoint_id),
        created_at=now,
        updated_at=now,
    )
    session.add(endpoint)
    await session.flush()
    return endpoint, secret


async def _check_destination(settings: Settings, url: str) -> None:
    if not settings.webhook_allow_private_networks:
        problem = await check_destination(url, loopback=settings.webhook_allow_loopback)
        if problem:
            raise InvalidInput(problem, loc=("body", "url"))


async def list_webhooks(session: AsyncSession, organization_id: int) -> Sequence[WebhookEndpoint]:
    rows = await session.scalars(
        select(WebhookEndpoint)
        .where(WebhookEndpoint.organization_id == organization_id)
        .order_by(WebhookEndpoint.created_at, WebhookEndpoint.id)
    )
    return rows.all()


async def get_webhook(
    session: AsyncSession, organization_id: int, webhook_id: uuid.UUID
) -> WebhookEndpoint:
    endpoint = await session.scalar(
        select(WebhookEndpoint).where(
            WebhookEndpoint.organization_id == organization_id, WebhookEndpoint.id == webhook_id
        )
    )
    if endpoint is None:
        raise NotFound(WEBHOOK_NOT_FOUND)
    return endpoint


async def update_webhook(
    session: AsyncSession,
    settings: Settings,
    organization_id: int,
    webhook_id: uuid.UUID,
    body: WebhookUpdate,
) -> WebhookEndpoint:
    """Change what ``body`` sets; a disabled endpoint gets no new events until enabled again."""
    endpoint = await get_webhook(session, organization_id, webhook_id)
    given = body.model_fields_set
    if "url" in given:
        if body.url is None:
            raise InvalidInput("url cannot be null", loc=("body", "url"))
        await _check_destination(settings, body.url)
        endpoint.url = body.url
    if "events" in given:
        endpoint.events = body.events
    if "description" in given:
        endpoint.description = body.description
    if "enabled" in given:
        if body.enabled is None:
            raise InvalidInput("enabled cannot be null", loc=("body", "enabled"))
        endpoint.enabled = body.enabled
    endpoint.updated_at = utcnow()
    await session.flush()
    return endpoint


async def delete_webhook(
    session: AsyncSession, organization_id: int, webhook_id: uuid.UUID
) -> None:
    """The endpoint, its pending jobs and its delivery log go (foreign keys cascade)."""
    deleted = await session.scalar(
        delete(WebhookEndpoint)
        .where(WebhookEndpoint.organization_id == organization_id, WebhookEndpoint.id == webhook_id)
        .returning(WebhookEndpoint.id)
    )
    if deleted is None:
        raise NotFound(WEBHOOK_NOT_FOUND)


async def send_test(session: AsyncSession, organization_id: int, webhook_id: uuid.UUID) -> str:
    endpoint = await get_webhook(session, organization_id, webhook_id)
    event_id = await emit(
        session,
        organization_id,
        "webhook.test",
        {"webhook_id": str(endpoint.id), "message": "This is a test event from callplane."},
        only=endpoint.id,
    )
    if event_id is None:  # a disabled endpoint
        raise NotFound(WEBHOOK_NOT_FOUND)
    return str(event_id)


async def list_deliveries(
    session: AsyncSession, organization_id: int, webhook_id: uuid.UUID, *, page: int, page_size: int
) -> tuple[Sequence[WebhookDelivery], int]:
    await get_webhook(session, organization_id, webhook_id)
    query = select(WebhookDelivery).where(
        WebhookDelivery.organization_id == organization_id,
        WebhookDelivery.endpoint_id == webhook_id,
    )
    total = await count(session, query)
    rows = await session.scalars(
        query.order_by(
            WebhookDelivery.created_at.desc(),
            WebhookDelivery.attempt.desc(),
            WebhookDelivery.id.desc(),
        )
        .limit(page_size)
        .offset(offset(page, page_size))
    )
    return rows.all(), total


async def redeliver(
    session: AsyncSession, organization_id: int, webhook_id: uuid.UUID, delivery_id: uuid.UUID
) -> None:
    """Send the delivery's event again now: one more attempt, numbered after the last one."""
    delivery = await session.scalar(
        select(WebhookDelivery).where(
            WebhookDelivery.organization_id == organization_id,
            WebhookDelivery.endpoint_id == webhook_id,
            WebhookDelivery.id == delivery_id,
        )
    )
    if delivery is None:
        await get_webhook(session, organization_id, webhook_id)
        raise NotFound(DELIVERY_NOT_FOUND)
    last = await session.scalar(
        select(WebhookDelivery.attempt)
        .where(
            WebhookDelivery.organization_id == organization_id,
            WebhookDelivery.endpoint_id == webhook_id,
            WebhookDelivery.event_id == delivery.event_id,
        )
        .order_by(WebhookDelivery.attempt.desc())
        .limit(1)
    )
    now = utcnow()
    session.add(
        WebhookJob(
            organization_id=organization_id,
            id=uuid.uuid4(),
            endpoint_id=webhook_id,
            event_id=delivery.event_id,
            attempt=(last or 0) + 1,
            first_attempt_at=now,
            due_at=now,
            retries=False,
        )
    )
    await session.flush()
    await wakeups.announce(session, wakeups.WEBHOOKS)
