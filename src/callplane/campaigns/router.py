"""Campaigns (``docs/campaigns.md``). Every error in the STATUS shape, as the agents' routes."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import Query
from starlette.requests import Request
from starlette.responses import Response

from callplane.campaigns import recipients, service
from callplane.campaigns.schemas import (
    Added,
    CampaignCreate,
    CampaignEnvelope,
    CampaignList,
    CampaignUpdate,
    RecipientList,
    RecipientStatus,
)
from callplane.errors import InvalidInput
from callplane.http.body import read_bounded
from callplane.http.deps import CurrentTenant, RuntimeDep, SessionDep
from callplane.http.families import STATUS
from callplane.http.responses import json_response
from callplane.http.routing import family_router, streamed_body
from callplane.kit import jsonvalues
from callplane.kit.pagination import total_pages
from callplane.kit.scopes import CAMPAIGNS

router = family_router(STATUS, scopes=CAMPAIGNS, tags=["campaigns"])

Page = Annotated[int, Query(ge=1, le=1_000_000)]
PageSize = Annotated[int, Query(ge=1, le=100)]
CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {"description": "The campaign's status does not allow this"}
}
_RECIPIENTS_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        # text/csv is taken too (see the operation's description); described as JSON only, as
        # client generators do not handle one operation with a JSON and a text body.
        "description": "JSON (at most 10,000 recipients); or, sent as text/csv, a CSV with a "
        "header row",
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["recipients"],
                    "properties": {
                        "recipients": {
                            "type": "array",
                            "maxItems": 10_000,
                            "items": {
                                "type": "object",
                                "required": ["phone_number"],
                                "properties": {
                                    "phone_number": {"type": "string"},
                                    "params": {"type": "object"},
                                    "timezone": {"type": "string"},
                                    "external_id": {"type": "string"},
                                },
                            },
                        }
                    },
                }
            },
        },
    }
}


async def _envelope(session: SessionDep, organization_id: int, campaign: Any) -> Response:
    [wire] = await service.campaigns_wire(session, organization_id, [campaign])
    return json_response({"campaign": wire})


@router.post(
    "/campaigns", response_model=CampaignEnvelope, status_code=201, summary="Create a campaign"
)
async def create_campaign(
    body: CampaignCreate, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """A campaign in `draft`: add recipients, then start it. Every setting is shown with its
    defaults filled in."""
    campaign = await service.create_campaign(session, tenant.organization_id, body)
    [wire] = await service.campaigns_wire(session, tenant.organization_id, [campaign])
    return json_response({"campaign": wire}, 201)


@router.get("/campaigns", response_model=CampaignList, summary="List campaigns, newest first")
async def list_campaigns(
    session: SessionDep, tenant: CurrentTenant, page: Page = 1, page_size: PageSize = 20
) -> Response:
    """The organization's campaigns, newest first, each with its counts."""
    campaigns, total = await service.list_campaigns(
        session, tenant.organization_id, page=page, page_size=page_size
    )
    return json_response(
        {
            "campaigns": await service.campaigns_wire(session, tenant.organization_id, campaigns),
            "total_count": total,
            "page": page,
            "page_size": page_size,
            "total_pages": total_pages(total, page_size),
        }
    )


@router.get("/campaigns/{uuid}", response_model=CampaignEnvelope, summary="Get a campaign")
async def get_campaign(uuid: uuid.UUID, session: SessionDep, tenant: CurrentTenant) -> Response:
    """The campaign with its counts of recipients by status."""
    campaign = await service.get_campaign(session, tenant.organization_id, uuid)
    return await _envelope(session, tenant.organization_id, campaign)


@router.patch(
    "/campaigns/{uuid}",
    response_model=CampaignEnvelope,
    summary="Change a draft or paused campaign",
    responses=CONFLICT,
)
async def update_campaign(
    uuid: uuid.UUID, body: CampaignUpdate, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """`name`, `schedule`, `retry`, `pacing`, each replaced whole; 409 unless draft or paused."""
    campaign = await service.update_campaign(session, tenant.organization_id, uuid, body)
    return await _envelope(session, tenant.organization_id, campaign)


def _move(name: str, doc: str) -> None:
    move = service.TRANSITIONS[name]

    async def endpoint(uuid: uuid.UUID, session: SessionDep, tenant: CurrentTenant) -> Response:
        campaign = await service.move_campaign(session, tenant.organization_id, uuid, move)
        return await _envelope(session, tenant.organization_id, campaign)

    endpoint.__name__ = f"{name}_campaign"
    endpoint.__doc__ = doc
    router.post(
        f"/campaigns/{{uuid}}/{name}",
        response_model=CampaignEnvelope,
        summary=f"{name.title()} a campaign",
        responses=CONFLICT,
    )(endpoint)


_move("start", "draft → running: the dialer begins calling the due recipients.")
_move("pause", "running → paused: calls in flight finish, no new one starts.")
_move("resume", "paused → running: the dialer takes the due recipients again.")
_move("cancel", "draft, running or paused → cancelled: queued recipients become cancelled.")


@router.post(
    "/campaigns/{uuid}/recipients",
    response_model=Added,
    status_code=201,
    summary="Add recipients (JSON or CSV)",
    openapi_extra=_RECIPIENTS_BODY,
    responses={**CONFLICT, 413: {"description": "Body larger than CALLPLANE_MAX_BODY_BYTES"}},
)
@streamed_body
async def add_recipients(
    uuid: uuid.UUID,
    request: Request,
    session: SessionDep,
    runtime: RuntimeDep,
    tenant: CurrentTenant,
) -> Response:
    """JSON `{"recipients": [...]}` (at most 10,000) or `text/csv` with a header row
    (`phone_number` required; `timezone` and `external_id` special; every other column a
    param). A bad row is reported in `rejected` with its 1-based row number; a number already
    in the campaign counts in `duplicates`."""
    raw = await read_bounded(request, runtime.settings.max_body_bytes)
    media = (request.headers.get("content-type") or "application/json").split(";")[0]
    media = media.strip().lower()
    if media in ("text/csv", "application/csv"):
        parsed = recipients.parse_csv(raw)
    elif media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    ):
        if not raw.strip():
            raise InvalidInput("Request body is required", loc=("body",), type_="missing")
        parsed = recipients.parse_json(jsonvalues.parse(raw))
    else:
        raise InvalidInput(
            "Content-Type must be application/json or text/csv", loc=("body",), type_="content_type"
        )
    added = await recipients.add_recipients(session, tenant.organization_id, uuid, parsed)
    return json_response(added, 201)


@router.get("/campaigns/{uuid}/recipients", response_model=RecipientList, summary="List recipients")
async def list_recipients(
    uuid: uuid.UUID,
    session: SessionDep,
    tenant: CurrentTenant,
    status: RecipientStatus | None = None,
    page: Page = 1,
    page_size: PageSize = 20,
) -> Response:
    """The campaign's recipients in the order they were added, optionally of one status."""
    rows, total = await recipients.list_recipients(
        session, tenant.organization_id, uuid, status=status, page=page, page_size=page_size
    )
    return json_response(
        {
            "recipients": [recipients.recipient_wire(r) for r in rows],
            "total_count": total,
            "page": page,
            "page_size": page_size,
            "total_pages": total_pages(total, page_size),
        }
    )


@router.get(
    "/campaigns/{uuid}/export",
    summary="Every recipient as CSV",
    response_class=Response,
    responses={200: {"content": {"text/csv": {"schema": {"type": "string"}}}}},
)
async def export_campaign(uuid: uuid.UUID, session: SessionDep, tenant: CurrentTenant) -> Response:
    """Every recipient with its status, attempts, last outcome and last call id."""
    await service.get_campaign(session, tenant.organization_id, uuid)
    rows = await recipients.all_recipients(session, tenant.organization_id, uuid)
    return Response(
        recipients.export_csv(rows),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="campaign-{uuid}.csv"'},
    )
