"""Calls: create, list, read, cancel. Every error, validation included, is in the STATUS shape
``{"status": "error", "success": false, "error": str, "errors": [str]}`` (SPEC;
docs/api-contract.md#error-shapes)."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

import orjson
from fastapi import Header, Query
from starlette.responses import Response

from callplane.calls import commands, events, idempotency, screen_pop, service
from callplane.calls.schemas import (
    CallCreate,
    CallCreated,
    CallEnvelope,
    CallEventList,
    CallList,
    Cancelled,
)
from callplane.http.deps import CurrentTenant, RuntimeDep, SessionDep
from callplane.http.families import STATUS
from callplane.http.responses import dumps, json_response
from callplane.http.routing import family_router
from callplane.kit.pagination import total_pages
from callplane.kit.schemas import UtcTimestamp
from callplane.kit.scopes import CALLS
from callplane.models.calls import CallStatus

router = family_router(STATUS, scopes=CALLS, tags=["calls"])


@router.post(
    "/calls",
    response_model=CallCreated,
    status_code=201,
    summary="Create (enqueue) an outbound call",
    responses={409: {"description": "Idempotency-Key reused with a different body"}},
)
async def create_call(
    body: CallCreate,
    session: SessionDep,
    runtime: RuntimeDep,
    tenant: CurrentTenant,
    idempotency_key: Annotated[
        str | None,
        Header(
            min_length=1,
            max_length=255,
            pattern=r"^[\x21-\x7e]+$",
            description="Retry-safe creation: the same key and body return the first response",
        ),
    ] = None,
) -> Response:
    """Enqueue an outbound call to to_number. The call is placed by the engine; follow it with
    GET /calls/{uuid}. Send an Idempotency-Key to make retries safe: the same key with the same
    body returns the first response, with another body 409."""
    org = tenant.organization_id
    # A failure after the key is claimed raises, and the request's unit of work rolls the claim
    # back with everything else (http.unit_of_work): only successes are ever replayed.
    if idempotency_key is not None:
        digest = idempotency.request_digest(body.model_dump(mode="json"))
        stored = await idempotency.claim(session, org, idempotency_key, digest)
        if stored is not None:
            return json_response(stored.body, stored.status_code)
    call = await commands.place_call(session, runtime, org, body)
    [wire] = await service.calls_wire(session, runtime, org, [call])
    content = {"success": True, "status": call.status, "call_id": call.id, "call": wire}
    if idempotency_key is not None:
        plain = orjson.loads(dumps(content))
        await idempotency.record(session, org, idempotency_key, 201, plain)
    return json_response(content, 201)


@router.get("/calls", response_model=CallList, summary="List calls, newest first")
async def list_calls(
    session: SessionDep,
    runtime: RuntimeDep,
    tenant: CurrentTenant,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=100)] = 20,
    status: CallStatus | None = None,
    direction: Literal["inbound", "outbound", "web"] | None = None,
    created_after: UtcTimestamp | None = None,
    created_before: UtcTimestamp | None = None,
) -> Response:
    """The organization's calls, newest first, filtered by status, direction and creation time."""
    calls, total = await service.list_calls(
        session,
        tenant.organization_id,
        page=page,
        page_size=page_size,
        status=status,
        direction=direction,
        created_after=created_after,
        created_before=created_before,
    )
    wires = await service.calls_wire(session, runtime, tenant.organization_id, calls)
    return json_response(
        {
            "calls": wires,
            "total_count": total,
            "page": page,
            "page_size": page_size,
            "total_pages": total_pages(total, page_size),
        }
    )


@router.get(
    "/calls/screen_pop/{token}",
    response_model=CallEnvelope,
    summary="The call a transfer handed over, by its screen-pop token",
)
async def get_call_by_screen_pop(
    token: str, session: SessionDep, runtime: RuntimeDep, tenant: CurrentTenant
) -> Response:
    """A transferred call, by the token its transfer carried (``X-Callplane-Screen-Pop``), so a
    contact centre's screen opens the call being handed over. Only to the call's organization."""
    call = await screen_pop.call_by_token(session, tenant.organization_id, token)
    [wire] = await service.calls_wire(session, runtime, tenant.organization_id, [call])
    return json_response({"success": True, "call": wire})


@router.get("/calls/{uuid}", response_model=CallEnvelope, summary="Read a call")
async def get_call(
    uuid: uuid.UUID, session: SessionDep, runtime: RuntimeDep, tenant: CurrentTenant
) -> Response:
    """One call with its transcript, analysis results, tags and recording URL."""
    call = await service.get_call(session, tenant.organization_id, uuid)
    [wire] = await service.calls_wire(session, runtime, tenant.organization_id, [call])
    return json_response({"success": True, "call": wire})


@router.post(
    "/calls/{uuid}/cancel",
    response_model=Cancelled,
    summary="Cancel a queued call",
    responses={409: {"description": "The call has started or finished"}},
)
async def cancel_call(
    uuid: uuid.UUID, session: SessionDep, runtime: RuntimeDep, tenant: CurrentTenant
) -> Response:
    """Cancel a call that is still enqueued. Cancelling an already cancelled call succeeds again;
    a call that has started or finished is 409 and stays unchanged."""
    await commands.cancel_call(session, runtime, tenant.organization_id, uuid)
    return json_response({"success": True, "status": "cancelled", "uuid": uuid})


@router.get(
    "/calls/{uuid}/events",
    response_model=CallEventList,
    summary="Every move of a call through its lifecycle, oldest first",
)
async def list_call_events(uuid: uuid.UUID, session: SessionDep, tenant: CurrentTenant) -> Response:
    """The events of a call (dialing, in_progress, ended, cancelled, analyzed), each with its
    sequence number, time and data, oldest first."""
    found = await events.list_call_events(session, tenant.organization_id, uuid)
    return json_response({"events": [events.event_wire(e) for e in found]})
