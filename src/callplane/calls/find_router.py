"""GET /calls/find_by_attribute. Every error, validation included, is in the find family's shape
``{"success": false, "errors": [str]}`` (SPEC; docs/api-contract.md#error-shapes)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query
from starlette.responses import Response

from callplane.calls.find import find_call_by_attribute, parse_fields, search_pairs
from callplane.calls.schemas import FoundCall
from callplane.http.deps import CurrentTenant, RuntimeDep, SessionDep
from callplane.http.families import FIND
from callplane.http.responses import json_response
from callplane.http.routing import family_router
from callplane.kit.scopes import CALLS

router = family_router(FIND, scopes=CALLS, tags=["calls"])


@router.get(
    "/calls/find_by_attribute",
    response_model=FoundCall,
    summary="Find the most recent call by a param or an external identifier",
)
async def find_by_attribute(
    session: SessionDep,
    runtime: RuntimeDep,
    tenant: CurrentTenant,
    param_key: Annotated[str | None, Query(description="Key in the call's params")] = None,
    param_value: Annotated[str | None, Query(description="Value of param_key")] = None,
    external_identifier_key: Annotated[
        str | None, Query(description="Key in the call's external_identifiers")
    ] = None,
    external_identifier_value: Annotated[
        str | None, Query(description="Value of external_identifier_key")
    ] = None,
    fields: Annotated[
        str | None,
        Query(
            description="Comma-separated, at most 50: id, summary, status, duration, "
            "transferred, agent_id, agent_commit_id, screen_pop_token, params.<key>"
        ),
    ] = None,
) -> Response:
    """The most recent call (greatest created_at, then id) whose params or external_identifiers
    hold the given key with the given value. Give param_key/param_value, external_identifier_key/
    external_identifier_value, or both pairs (the call must then match both). With fields, the
    call holds only the requested fields."""
    pairs = search_pairs(param_key, param_value, external_identifier_key, external_identifier_value)
    names = parse_fields(fields)
    call = await find_call_by_attribute(session, runtime, tenant.organization_id, pairs, names)
    return json_response({"success": True, "call": call})
