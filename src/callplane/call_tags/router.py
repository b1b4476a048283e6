"""Call tags. Validation errors use the detail list, other errors ``{"detail": str}``."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query
from starlette.responses import Response

from callplane.call_tags import service
from callplane.call_tags.schemas import CallTag, CallTagCreate, CallTagList
from callplane.http.deps import CurrentTenant, SessionDep
from callplane.http.families import DETAIL
from callplane.http.responses import json_response
from callplane.http.routing import family_router
from callplane.kit.pagination import total_pages
from callplane.kit.scopes import CALLS

router = family_router(DETAIL, scopes=CALLS, tags=["call tags"])


@router.get("/call_tags", response_model=CallTagList, summary="List call tags")
async def list_call_tags(
    session: SessionDep,
    tenant: CurrentTenant,
    page: Annotated[int, Query(ge=1, le=1_000_000, description="Page number, from 1")] = 1,
    page_size: Annotated[int, Query(ge=1, le=100, description="Tags per page")] = 20,
) -> Response:
    """A page of the organization's call tags, oldest first."""
    tags, total = await service.list_call_tags(session, tenant.organization_id, page, page_size)
    return json_response(
        CallTagList(
            call_tags=[_wire(t) for t in tags],
            total_count=total,
            page=page,
            page_size=page_size,
            total_pages=total_pages(total, page_size),
        )
    )


@router.post("/call_tags", response_model=CallTag, status_code=201, summary="Create a call tag")
async def create_call_tag(
    body: CallTagCreate, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Create a tag to classify calls with (name, description, color, always_enabled)."""
    tag = await service.create_call_tag(session, tenant.organization_id, **body.model_dump())
    return json_response(_wire(tag), status_code=201)


def _wire(tag: object) -> CallTag:
    # SPEC lists both id and uuid for a call tag; they carry the same value here.
    return CallTag.model_validate(
        {**{k: getattr(tag, k) for k in CallTag.model_fields if k != "uuid"}, "uuid": tag.id}  # type: ignore[attr-defined]
    )
