"""Phone numbers: the organization's numbers, each renamed in place."""

from __future__ import annotations

import uuid
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from callplane.dashboard.forms import fields
from callplane.dashboard.rendering import render
from callplane.dashboard.routing import CurrentPerson, dashboard_router
from callplane.errors import InvalidInput
from callplane.http.deps import SessionDep
from callplane.phone_numbers.service import clean_friendly_name, list_numbers, rename_number

router = dashboard_router()


@router.get("/numbers")
async def numbers_page(
    request: Request, session: SessionDep, person: CurrentPerson, renamed: str | None = None
) -> Response:
    numbers = await list_numbers(session, person.organization_id)
    return render(
        request, "numbers.html", section="numbers", numbers=numbers, renamed=renamed, error=None
    )


@router.post("/numbers/{number_id}")
async def rename(
    request: Request, number_id: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    form = await fields(request)
    try:
        name = clean_friendly_name(form.get("friendly_name", ""))
    except InvalidInput as exc:
        numbers = await list_numbers(session, person.organization_id)
        return render(
            request,
            "numbers.html",
            422,
            section="numbers",
            numbers=numbers,
            renamed=None,
            error=exc.message,
        )
    number = await rename_number(session, person.organization_id, number_id, name)
    base = request.scope.get("root_path", "")
    return RedirectResponse(f"{base}/numbers?renamed={quote(number.number, safe='')}", 303)
