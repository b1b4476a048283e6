"""Webhook endpoints and their delivery log (docs/api-contract.md#webhooks). Errors in the STATUS
shape."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Query
from starlette.responses import Response

from callplane.http.deps import CurrentTenant, RuntimeDep, SessionDep
from callplane.http.families import STATUS
from callplane.http.responses import json_response
from callplane.http.routing import family_router
from callplane.kit.pagination import total_pages
from callplane.kit.scopes import WEBHOOKS
from callplane.webhooks import service
from callplane.webhooks.schemas import (
    Accepted,
    Deleted,
    DeliveryList,
    TestSent,
    WebhookCreate,
    WebhookCreated,
    WebhookList,
    WebhookOne,
    WebhookUpdate,
)
from callplane.webhooks.secrets import box_for

router = family_router(STATUS, scopes=WEBHOOKS, tags=["webhooks"])


@router.post(
    "/webhooks",
    response_model=WebhookCreated,
    status_code=201,
    summary="Register a webhook endpoint (the secret is shown only here)",
)
async def create_webhook(
    body: WebhookCreate, session: SessionDep, runtime: RuntimeDep, tenant: CurrentTenant
) -> Response:
    """Register an HTTPS (or HTTP) endpoint for some or all event types. The response carries the
    endpoint's signing secret (Standard Webhooks, `whsec_...`), shown only here."""
    box = box_for(await runtime.signer.key.load(runtime.db))
    endpoint, secret = await service.create_webhook(
        session, runtime.settings, tenant.organization_id, body, box
    )
    return json_response({"webhook": service.webhook_wire(endpoint, secret=secret)}, 201)


@router.get("/webhooks", response_model=WebhookList, summary="List webhook endpoints")
async def list_webhooks(session: SessionDep, tenant: CurrentTenant) -> Response:
    """The organization's webhook endpoints (without their secrets)."""
    endpoints = await service.list_webhooks(session, tenant.organization_id)
    return json_response({"webhooks": [service.webhook_wire(e) for e in endpoints]})


@router.get("/webhooks/{id}", response_model=WebhookOne, summary="Read a webhook endpoint")
async def get_webhook(id: uuid.UUID, session: SessionDep, tenant: CurrentTenant) -> Response:
    """One webhook endpoint (without its secret)."""
    endpoint = await service.get_webhook(session, tenant.organization_id, id)
    return json_response({"webhook": service.webhook_wire(endpoint)})


@router.patch(
    "/webhooks/{id}",
    response_model=WebhookOne,
    summary="Change a webhook endpoint's URL, events, description or enabled",
)
async def update_webhook(
    id: uuid.UUID,
    body: WebhookUpdate,
    session: SessionDep,
    runtime: RuntimeDep,
    tenant: CurrentTenant,
) -> Response:
    """Change the fields given; `enabled: false` pauses deliveries of new events to it."""
    endpoint = await service.update_webhook(
        session, runtime.settings, tenant.organization_id, id, body
    )
    return json_response({"webhook": service.webhook_wire(endpoint)})


@router.delete("/webhooks/{id}", response_model=Deleted, summary="Delete a webhook endpoint")
async def delete_webhook(id: uuid.UUID, session: SessionDep, tenant: CurrentTenant) -> Response:
    """Delete a webhook endpoint; nothing more is delivered to it."""
    await service.delete_webhook(session, tenant.organization_id, id)
    return json_response({"success": True})


@router.post(
    "/webhooks/{id}/test",
    response_model=TestSent,
    status_code=202,
    summary="Send a webhook.test event to this endpoint",
)
async def test_webhook(id: uuid.UUID, session: SessionDep, tenant: CurrentTenant) -> Response:
    """Queue a webhook.test event for this endpoint; its delivery appears in the delivery log."""
    event_id = await service.send_test(session, tenant.organization_id, id)
    return json_response({"success": True, "event_id": event_id}, 202)


@router.get(
    "/webhooks/{id}/deliveries",
    response_model=DeliveryList,
    summary="Delivery attempts to this endpoint, newest first",
)
async def list_deliveries(
    id: uuid.UUID,
    session: SessionDep,
    tenant: CurrentTenant,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=100)] = 20,
) -> Response:
    """Every delivery attempt to this endpoint, newest first, with status code, error and timing."""
    deliveries, total = await service.list_deliveries(
        session, tenant.organization_id, id, page=page, page_size=page_size
    )
    return json_response(
        {
            "deliveries": [service.delivery_wire(d) for d in deliveries],
            "total_count": total,
            "page": page,
            "page_size": page_size,
            "total_pages": total_pages(total, page_size),
        }
    )


@router.post(
    "/webhooks/{id}/deliveries/{delivery_id}/redeliver",
    response_model=Accepted,
    status_code=202,
    summary="Send a delivery's event again now",
)
async def redeliver(
    id: uuid.UUID, delivery_id: uuid.UUID, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Send a delivery's event to the endpoint again now (one more attempt in the log)."""
    await service.redeliver(session, tenant.organization_id, id, delivery_id)
    return json_response({"success": True}, 202)
