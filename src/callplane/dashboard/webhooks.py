"""Webhooks: endpoints (add — the signing secret is shown once — and delete), a test event, the
delivery log of an endpoint, and redelivery. The same services as ``/v1/webhooks``."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import Query
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from callplane.dashboard import flash
from callplane.dashboard.forms import fields
from callplane.dashboard.rendering import render
from callplane.dashboard.routing import CurrentPerson, dashboard_router, runtime_of
from callplane.errors import InvalidInput
from callplane.http.deps import SessionDep
from callplane.kit.pagination import total_pages
from callplane.webhooks import service
from callplane.webhooks.events import EVENT_TYPES
from callplane.webhooks.schemas import WebhookCreate
from callplane.webhooks.secrets import box_for

router = dashboard_router()
PAGE_SIZE = 25


async def _list_page(
    request: Request,
    session: SessionDep,
    person: CurrentPerson,
    status_code: int = 200,
    **context: Any,
) -> Response:
    endpoints = await service.list_webhooks(session, person.organization_id)
    context.setdefault("created", None)
    context.setdefault("errors", [])
    context.setdefault("values", {})
    context.setdefault("notice", None)
    return render(
        request,
        "webhooks.html",
        status_code,
        section="webhooks",
        endpoints=[service.webhook_wire(e) for e in endpoints],
        # webhook.test goes only where "Send a test event" sends it, never by subscription.
        event_types=[t for t in EVENT_TYPES if t != "webhook.test"],
        **context,
    )


@router.get("/webhooks")
async def webhooks_page(
    request: Request, session: SessionDep, person: CurrentPerson, deleted: str | None = None
) -> Response:
    notice = "Webhook endpoint deleted." if deleted else None
    shown = await flash.take(request)
    page = await _list_page(request, session, person, notice=notice, created=shown)
    return flash.forget(request, page)


@router.post("/webhooks")
async def add_webhook(request: Request, session: SessionDep, person: CurrentPerson) -> Response:
    form = await request.form(max_files=0, max_fields=2000)
    values = await fields(request)
    events = [e for e in form.getlist("events") if isinstance(e, str)]
    body: dict[str, Any] = {"url": values.get("url", "").strip()}
    if events:
        body["events"] = events
    if values.get("description", "").strip():
        body["description"] = values["description"].strip()
    try:
        create = WebhookCreate.model_validate(body)
        runtime = runtime_of(request)
        box = box_for(await runtime.signer.key.load(runtime.db))
        endpoint, secret = await service.create_webhook(
            session, runtime.settings, person.organization_id, create, box
        )
    except ValidationError as exc:
        errors = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        return await _list_page(request, session, person, 422, errors=errors, values=values)
    except InvalidInput as exc:
        return await _list_page(
            request, session, person, 422, errors=[f"url: {exc.message}"], values=values
        )
    # The secret must never sit in a URL or in the history: it rides the redirect encrypted.
    return await flash.redirect_with(
        request, "/webhooks", {"url": endpoint.url, "secret": secret, "id": str(endpoint.id)}
    )


@router.post("/webhooks/{webhook_id}/delete")
async def delete(
    request: Request, webhook_id: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    await service.delete_webhook(session, person.organization_id, webhook_id)
    return RedirectResponse(f"{request.scope.get('root_path', '')}/webhooks?deleted=1", 303)


@router.get("/webhooks/{webhook_id}")
async def deliveries_page(
    request: Request,
    webhook_id: uuid.UUID,
    session: SessionDep,
    person: CurrentPerson,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    sent: str | None = None,
) -> Response:
    endpoint = await service.get_webhook(session, person.organization_id, webhook_id)
    deliveries, total = await service.list_deliveries(
        session, person.organization_id, webhook_id, page=page, page_size=PAGE_SIZE
    )
    notices = {
        "test": "A webhook.test event is on its way; reload to see the attempt.",
        "again": "The event will be sent again now; reload to see the attempt.",
    }
    return render(
        request,
        "webhook.html",
        section="webhooks",
        endpoint=service.webhook_wire(endpoint),
        deliveries=[service.delivery_wire(d) for d in deliveries],
        total=total,
        page=page,
        pages=total_pages(total, PAGE_SIZE),
        notice=notices.get(sent or ""),
    )


@router.post("/webhooks/{webhook_id}/test")
async def send_test(
    request: Request, webhook_id: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    await service.send_test(session, person.organization_id, webhook_id)
    base = request.scope.get("root_path", "")
    return RedirectResponse(f"{base}/webhooks/{webhook_id}?sent=test", 303)


@router.post("/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver")
async def redeliver(
    request: Request,
    webhook_id: uuid.UUID,
    delivery_id: uuid.UUID,
    session: SessionDep,
    person: CurrentPerson,
) -> Response:
    await service.redeliver(session, person.organization_id, webhook_id, delivery_id)
    base = request.scope.get("root_path", "")
    return RedirectResponse(f"{base}/webhooks/{webhook_id}?sent=again", 303)
