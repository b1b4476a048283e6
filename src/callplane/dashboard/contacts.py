"""Contacts: every contact with readable data, a search by identifier, one contact's data."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import Query
from starlette.requests import Request
from starlette.responses import Response

from callplane.contacts.identifiers import normalize_identifier
from callplane.contacts.service import get_contact_data, list_contacts, remaining_ttl
from callplane.dashboard.rendering import render
from callplane.dashboard.routing import CurrentPerson, dashboard_router
from callplane.errors import InvalidInput, NotFound
from callplane.http.deps import SessionDep
from callplane.kit.pagination import total_pages
from callplane.models.base import utcnow

router = dashboard_router()
PAGE_SIZE = 25


@router.get("/contacts")
async def contacts_page(
    request: Request,
    session: SessionDep,
    person: CurrentPerson,
    q: Annotated[str, Query(max_length=256)] = "",
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
) -> Response:
    context: dict[str, Any] = {"q": q, "page": page, "error": None, "found": None}
    if q.strip():
        # The same identifier rules as the API: "(415) 555-0100" finds +14155550100.
        try:
            identifier = normalize_identifier(q.strip())
            context["found"] = await get_contact_data(session, person.organization_id, identifier)
        except InvalidInput as exc:
            context["error"] = f"{q}: {exc.message}"
        except NotFound:
            context["found"] = None
        context.update(contacts=[], total=0, pages=0)
    else:
        rows, total = await list_contacts(session, person.organization_id, page, PAGE_SIZE)
        context.update(contacts=rows, total=total, pages=total_pages(total, PAGE_SIZE))
    return render(request, "contacts.html", section="contacts", **context)


@router.get("/contacts/{identifier}")
async def contact_page(
    request: Request, identifier: str, session: SessionDep, person: CurrentPerson
) -> Response:
    try:
        key = normalize_identifier(identifier)
    except InvalidInput:
        raise NotFound("Contact data not found") from None
    now = utcnow()
    stored = await get_contact_data(session, person.organization_id, key, now=now)
    parsed = json.loads(stored.data_json)
    data = json.dumps(parsed, indent=2, ensure_ascii=False)
    return render(
        request,
        "contact.html",
        section="contacts",
        contact=stored,
        data=data,
        parsed=parsed,
        ttl=remaining_ttl(stored.expires_at, now),
    )
