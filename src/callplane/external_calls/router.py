"""External calls. Request validation uses the detail list; every other error is
``{"status": "error", "success": false, "error", "errors"}`` (SPEC, DESIGN §4)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import Query
from starlette.responses import Response

from callplane.external_calls import service
from callplane.external_calls.schemas import ExternalCall, ExternalCallList
from callplane.http.deps import CurrentTenant, RuntimeDep, SessionDep
from callplane.http.families import EXTERNAL_CALLS
from callplane.http.pagination import total_pages
from callplane.http.responses import json_response
from callplane.http.routing import family_router
from callplane.models import external_calls as models
from callplane.recordings.service import sign_recordings

router = family_router(EXTERNAL_CALLS, tags=["external_calls"])


@router.get("/external_calls", response_model=ExternalCallList, summary="List external calls")
async def list_external_calls(
    session: SessionDep,
    runtime: RuntimeDep,
    tenant: CurrentTenant,
    page: Annotated[int, Query(ge=1, le=1_000_000, description="Page number, from 1")] = 1,
    page_size: Annotated[int, Query(ge=1, le=100, description="Calls per page")] = 20,
) -> Response:
    calls, total, legs = await service.list_external_calls(
        session, tenant.organization_id, page, page_size
    )
    urls = await sign_recordings(runtime, [leg for c in calls for leg in legs[c.id]])
    return json_response(
        {
            "external_calls": [_wire(c, legs[c.id], urls) for c in calls],
            "total_count": total,
            "page": page,
            "page_size": page_size,
            "total_pages": total_pages(total, page_size),
        }
    )


@router.get(
    "/external_calls/{uuid}",
    response_model=ExternalCall,
    summary="Read an external call session",
    responses={404: {"description": "External call not found"}},
)
async def get_external_call(
    uuid: uuid.UUID, session: SessionDep, runtime: RuntimeDep, tenant: CurrentTenant
) -> Response:
    call, legs = await service.get_external_call(session, tenant.organization_id, uuid)
    urls = await sign_recordings(runtime, legs)
    return json_response(_wire(call, legs, urls))


def _wire(
    call: models.ExternalCall, legs: list[models.Recording], urls: dict[Any, str]
) -> dict[str, Any]:
    # Plain dicts (serialized by orjson): the response_model above documents the same shape.
    # Uuids go out as text: asyncpg returns its own UUID subclass, which orjson does not know.
    return {
        "id": str(call.id),
        "external_call_id": call.external_call_id,
        "title": call.title,
        "direction": call.direction,
        "from_number": call.from_number,
        "to_number": call.to_number,
        "duration_seconds": call.duration_seconds,
        "started_at": call.started_at,
        "status": call.status,
        "recording_count": len(legs),
        "source": (
            {
                "id": _text(call.source_id),
                "name": call.source_name,
                "provider": call.source_provider,
            }
            if call.source_id or call.source_name or call.source_provider
            else None
        ),
        "created_at": call.created_at,
        "updated_at": call.updated_at,
        "recording_presigned_urls": [urls[leg.id] for leg in legs if leg.id in urls],
        "recordings": [_wire_leg(leg) for leg in legs],
    }


def _wire_leg(leg: models.Recording) -> dict[str, Any]:
    processed = leg.status == service.PROCESSED_STATUS
    return {
        "id": str(leg.id),
        "file_name": leg.file_name,
        "status": leg.status,
        "started_at": leg.started_at,
        "transcript": leg.transcript if processed else None,
        "summary": leg.summary if processed else None,
        "created_at": leg.created_at,
        "updated_at": leg.updated_at,
    }


def _text(value: object | None) -> str | None:
    return None if value is None else str(value)
