"""API keys: list, create (the key is shown once, here, and never again) and revoke."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from callplane.dashboard import flash
from callplane.dashboard.forms import fields
from callplane.dashboard.rendering import render
from callplane.dashboard.routing import CurrentPerson, dashboard_router
from callplane.http.deps import SessionDep
from callplane.orgs.service import issue_key, list_keys, revoke_key

router = dashboard_router(area="keys")
NAME_MAX = 255


async def _page(
    request: Request,
    session: SessionDep,
    person: CurrentPerson,
    status_code: int = 200,
    **context: object,
) -> Response:
    keys = await list_keys(session, person.organization_id)
    context.setdefault("created", None)
    context.setdefault("created_name", "")
    context.setdefault("error", None)
    context.setdefault("revoked", None)
    return render(request, "keys.html", status_code, section="keys", keys=keys, **context)


@router.get("/keys")
async def keys_page(
    request: Request, session: SessionDep, person: CurrentPerson, revoked: int | None = None
) -> Response:
    shown = await flash.take(request)
    if shown is not None:
        page = await _page(
            request, session, person, created=shown, created_name=shown.get("name", "")
        )
    else:
        page = await _page(request, session, person, revoked=revoked)
    return flash.forget(request, page)


@router.post("/keys")
async def create_key(request: Request, session: SessionDep, person: CurrentPerson) -> Response:
    name = (await fields(request)).get("name", "").strip()
    if not 1 <= len(name) <= NAME_MAX or any(ord(c) < 32 for c in name):
        return await _page(
            request,
            session,
            person,
            422,
            error=f"A key needs a name of 1 to {NAME_MAX} characters.",
        )
    issued = await issue_key(session, person.organization_id, name=name)
    # The plain key must never sit in a URL or in the history: it rides the redirect encrypted.
    return await flash.redirect_with(
        request, "/keys", {"id": issued.id, "api_key": issued.api_key, "name": name}
    )


@router.post("/keys/{key_id}/revoke")
async def revoke(
    request: Request, key_id: int, session: SessionDep, person: CurrentPerson
) -> Response:
    await revoke_key(session, key_id, organization_id=person.organization_id)
    base = request.scope.get("root_path", "")
    return RedirectResponse(f"{base}/keys?revoked={key_id}", 303)
