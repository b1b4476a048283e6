"""Phone numbers. Every error, validation included, is ``{"error": str}`` (SPEC, DESIGN §4)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import Body
from starlette.responses import Response

from callplane.http.deps import CurrentTenant, SessionDep
from callplane.http.families import PLAIN
from callplane.http.responses import json_response
from callplane.http.routing import family_router
from callplane.phone_numbers import service
from callplane.phone_numbers.schemas import PhoneNumber, PhoneNumberUpdate

router = family_router(PLAIN, tags=["phone numbers"])


@router.patch(
    "/numbers/{uuid}",
    response_model=PhoneNumber,
    summary="Update a number's friendly name",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": PhoneNumberUpdate.model_json_schema()}},
        }
    },
)
async def update_number(
    uuid: uuid.UUID,
    body: Annotated[dict[str, Any], Body()],
    session: SessionDep,
    tenant: CurrentTenant,
) -> Response:
    """Rename a phone number (friendly_name, 1-255 characters after trimming)."""
    friendly_name = service.clean_friendly_name(body.get("friendly_name"))
    number = await service.rename_number(session, tenant.organization_id, uuid, friendly_name)
    return json_response(number)
