"""Campaigns: create one from a pasted or uploaded CSV (with a preview of its first rows and the
rows it would reject), its funnel of counts, recipients by status with their calls, start,
pause, resume, cancel, and the export. The same services as ``/v1/campaigns``."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import Query
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from callplane.agents.service import list_agents
from callplane.campaigns import recipients, service
from callplane.campaigns.schemas import CampaignCreate, RecipientStatus
from callplane.dashboard.forms import fields
from callplane.dashboard.rendering import render
from callplane.dashboard.routing import CurrentPerson, dashboard_router
from callplane.errors import InvalidInput
from callplane.http.deps import SessionDep
from callplane.kit.pagination import total_pages
from callplane.models.campaigns import RECIPIENT_STATUSES

router = dashboard_router()
PAGE_SIZE = 25
PREVIEW_ROWS = 10
#: The funnel, in the order a recipient moves through it.
FUNNEL = ("total", "queued", "calling", *RECIPIENT_STATUSES[2:], "attempts")
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def _messages(exc: ValidationError) -> list[str]:
    return [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]


def _body(values: dict[str, str], days: list[str]) -> CampaignCreate:
    window: dict[str, Any] = {"days": days or list(DAYS[:5])}
    for name in ("start", "end"):
        if values.get(name):
            window[name] = values[name]
    return CampaignCreate.model_validate(
        {
            "name": values.get("name", "").strip(),
            "agent_id": values.get("agent_id") or None,
            "schedule": {"timezone": values.get("timezone") or "recipient", "windows": [window]},
            "retry": {"max_attempts": int(values.get("max_attempts") or 3)},
        }
    )


async def _list(
    request: Request, session: SessionDep, person: CurrentPerson, status: int = 200, **extra: Any
) -> Response:
    campaigns, _ = await service.list_campaigns(
        session, person.organization_id, page=1, page_size=100
    )
    agents, _ = await list_agents(session, person.organization_id, page=1, page_size=100)
    extra.setdefault("errors", [])
    extra.setdefault("values", {})
    extra.setdefault("days", list(DAYS[:5]))
    extra.setdefault("preview", None)
    return render(
        request,
        "campaigns.html",
        status,
        section="campaigns",
        campaigns=await service.campaigns_wire(session, person.organization_id, campaigns),
        agents=agents,
        all_days=DAYS,
        **extra,
    )


@router.get("/campaigns")
async def campaigns_page(request: Request, session: SessionDep, person: CurrentPerson) -> Response:
    return await _list(request, session, person)


@router.post("/campaigns")
async def create(request: Request, session: SessionDep, person: CurrentPerson) -> Response:
    """``intent=preview`` shows what the CSV would add and reject; ``create`` makes the campaign
    in draft with those recipients."""
    form = await request.form(max_files=0, max_fields=2000)
    days = [str(d) for d in form.getlist("days") if str(d) in DAYS]
    values = await fields(request)
    csv_text = values.get("csv", "")
    keep: dict[str, Any] = {"values": values, "days": days}
    try:
        parsed = recipients.parse_csv(csv_text.encode())
    except InvalidInput as exc:
        return await _list(request, session, person, 422, errors=[exc.message], **keep)
    if values.get("intent") == "preview":
        preview = {
            "rows": [row for _, row in parsed.rows[:PREVIEW_ROWS]],
            "count": len(parsed.rows),
            "rejected": parsed.rejected,
        }
        return await _list(request, session, person, preview=preview, **keep)
    try:
        body = _body(values, days)
    except ValidationError as exc:
        return await _list(request, session, person, 422, errors=_messages(exc), **keep)
    except ValueError:
        return await _list(request, session, person, 422, errors=["max_attempts: 1 to 10"], **keep)
    try:
        campaign = await service.create_campaign(session, person.organization_id, body)
    except InvalidInput as exc:
        return await _list(request, session, person, 422, errors=[exc.message], **keep)
    added = await recipients.add_recipients(session, person.organization_id, campaign.id, parsed)
    return RedirectResponse(
        f"{request.scope.get('root_path', '')}/campaigns/{campaign.id}"
        f"?added={added['added']}&rejected={len(added['rejected'])}",
        303,
    )


@router.get("/campaigns/{campaign_id}")
async def campaign_page(
    request: Request,
    campaign_id: uuid.UUID,
    session: SessionDep,
    person: CurrentPerson,
    status: RecipientStatus | None = None,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    added: Annotated[int | None, Query(ge=0)] = None,
    rejected: Annotated[int | None, Query(ge=0)] = None,
) -> Response:
    campaign = await service.get_campaign(session, person.organization_id, campaign_id)
    [wire] = await service.campaigns_wire(session, person.organization_id, [campaign])
    rows, total = await recipients.list_recipients(
        session, person.organization_id, campaign_id, status=status, page=page, page_size=PAGE_SIZE
    )
    notice = None
    if added is not None:
        notice = f"Campaign created with {added} recipients ({rejected or 0} rows rejected)."
    return render(
        request,
        "campaign.html",
        section="campaigns",
        campaign=wire,
        funnel=[(name, wire["counts"][name]) for name in FUNNEL],
        recipients=[recipients.recipient_wire(r) for r in rows],
        status=status,
        statuses=RECIPIENT_STATUSES,
        page=page,
        pages=total_pages(total, PAGE_SIZE),
        params={"status": status} if status else {},
        notice=notice,
        moves=[v for v, m in service.TRANSITIONS.items() if campaign.status in m.source],
    )


@router.post("/campaigns/{campaign_id}/{verb}")
async def move(
    request: Request, campaign_id: uuid.UUID, verb: str, session: SessionDep, person: CurrentPerson
) -> Response:
    transition = service.TRANSITIONS.get(verb)
    if transition is None:
        raise InvalidInput(f"no such move: {verb[:20]}")
    await service.move_campaign(session, person.organization_id, campaign_id, transition)
    return RedirectResponse(f"{request.scope.get('root_path', '')}/campaigns/{campaign_id}", 303)


@router.get("/campaigns/{campaign_id}/export.csv")
async def export(campaign_id: uuid.UUID, session: SessionDep, person: CurrentPerson) -> Response:
    await service.get_campaign(session, person.organization_id, campaign_id)
    rows = await recipients.all_recipients(session, person.organization_id, campaign_id)
    return Response(
        recipients.export_csv(rows),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="campaign-{campaign_id}.csv"'},
    )
