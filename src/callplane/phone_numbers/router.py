"""Phone numbers. Every error, validation included, is ``{"error": str}`` (SPEC,
docs/api-contract.md#error-shapes)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import Body
from starlette.responses import Response

from callplane.http.deps import CurrentTenant, SessionDep
from callplane.http.families import PLAIN
from callplane.http.responses import json_response
from callplane.http.routing import family_router
from callplane.kit.scopes import NUMBERS
from callplane.phone_numbers import routing, service
from callplane.phone_numbers.schemas import (
    Deleted,
    PhoneNumber,
    PhoneNumberCreate,
    PhoneNumberList,
    PhoneNumberUpdate,
)

router = family_router(PLAIN, scopes=NUMBERS, tags=["phone numbers"])


def _body_schema(model: type[Any]) -> dict[str, Any]:
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": model.model_json_schema()}},
        }
    }


@router.post(
    "/numbers",
    response_model=PhoneNumber,
    status_code=201,
    summary="Add a phone number",
    responses={409: {"description": "The number exists (in any organization)"}},
    openapi_extra=_body_schema(PhoneNumberCreate),
)
async def create_number(
    body: Annotated[dict[str, Any], Body()], session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Add a number (E.164), optionally routed to an agent's branch (default main)."""
    number = await routing.create_number(session, tenant.organization_id, body)
    return json_response(number, 201)


@router.get("/numbers", response_model=PhoneNumberList, summary="List phone numbers")
async def list_numbers(session: SessionDep, tenant: CurrentTenant) -> Response:
    """The organization's numbers with the agent and branch each routes to, by number."""
    numbers = await service.list_numbers(session, tenant.organization_id)
    return json_response({"numbers": [n.model_dump(mode="json") for n in numbers]})


@router.patch(
    "/numbers/{uuid}",
    response_model=PhoneNumber,
    summary="Rename a number or route it to an agent's branch",
    openapi_extra=_body_schema(PhoneNumberUpdate),
)
async def update_number(
    uuid: uuid.UUID,
    body: Annotated[dict[str, Any], Body()],
    session: SessionDep,
    tenant: CurrentTenant,
) -> Response:
    """Rename a phone number (friendly_name, 1-255 characters after trimming) and/or route it:
    `agent_id` (uuid, or null to unroute) and `agent_branch_name` (default main)."""
    number = await routing.update_number(session, tenant.organization_id, uuid, body)
    return json_response(number)


@router.delete("/numbers/{uuid}", response_model=Deleted, summary="Delete a phone number")
async def delete_number(uuid: uuid.UUID, session: SessionDep, tenant: CurrentTenant) -> Response:
    """Remove the number; calls already made keep their numbers."""
    await routing.delete_number(session, tenant.organization_id, uuid)
    return json_response({"success": True})
