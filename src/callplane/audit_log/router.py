"""``GET /audit_log``: the organization's audit events, newest first, filtered. Every error in
the STATUS shape."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import sqlalchemy as sa
from fastapi import Query
from pydantic import BaseModel
from starlette.responses import Response

from callplane.audit.seal import has_unsealed, seal
from callplane.audit_log.query import filtered
from callplane.http.deps import CurrentTenant, RuntimeDep, SessionDep
from callplane.http.families import STATUS
from callplane.http.responses import json_response
from callplane.http.routing import family_router
from callplane.kit.pagination import offset, total_pages
from callplane.kit.schemas import UtcTimestamp
from callplane.kit.scopes import AUDIT
from callplane.kit.tenancy import select_owned
from callplane.models.audit import AuditEvent, AuditHead

router = family_router(STATUS, scopes=AUDIT, tags=["audit log"])


def _filter(description: str) -> Any:
    return Query(min_length=1, max_length=300, description=description)


class EventOut(BaseModel):
    id: int
    at: datetime
    actor: str
    action: str
    resource_type: str
    resource_id: str | None
    ip: str | None
    request_id: str | None
    hash: str


class EventList(BaseModel):
    events: list[EventOut]
    total_count: int
    page: int
    page_size: int
    total_pages: int


def event_wire(event: AuditEvent) -> dict[str, Any]:
    return {
        "id": event.seq,
        "at": event.at,
        "actor": event.actor,
        "action": event.action,
        "resource_type": event.resource_type,
        "resource_id": event.resource_id,
        "ip": event.ip,
        "request_id": event.request_id,
        "hash": event.hash,
    }


@router.get("/audit_log", response_model=EventList, summary="Read the audit log, newest first")
async def list_audit_events(
    session: SessionDep,
    runtime: RuntimeDep,
    tenant: CurrentTenant,
    actor: Annotated[
        str | None, _filter("Only events of this actor (`api_key:<id>`, `user:<email>`, `system`)")
    ] = None,
    action: Annotated[
        str | None, _filter("Only events of this action, e.g. `agents.create_agent`")
    ] = None,
    resource_id: Annotated[str | None, _filter("Only events about this resource id")] = None,
    since: Annotated[UtcTimestamp | None, Query(description="Events at or after this time")] = None,
    until: Annotated[UtcTimestamp | None, Query(description="Events before this time")] = None,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=100)] = 50,
) -> Response:
    """Who changed or read what, when and from where: every change through the API or the
    dashboard, every recording or contact-data read, every sign-in and every retention deletion.
    Each event's `hash` chains it to the one before (`callplane audit verify` checks the chain).
    Each filter is served by an index. Events written since the last seal are sealed first."""
    if await has_unsealed(session, tenant.organization_id):
        # The request's transaction ends first: its connection goes back to the pool for the
        # sealing transaction, and on SQLite the next read sees what sealing committed.
        await session.commit()
        await seal(runtime.db, tenant.organization_id)
    newest = None
    if resource_id is not None:  # the resource filter reads every run of the chain
        head = select_owned(AuditHead, tenant.organization_id, AuditHead.seq)
        newest = await session.scalar(head)
    query, order, count_in_order = filtered(
        tenant.organization_id,
        sqlite=session.get_bind().dialect.name == "sqlite",
        newest_seq=int(newest or 0),
        actor=actor,
        action=action,
        resource_id=resource_id,
        since=since,
        until=until,
    )
    counted = query.order_by(*order) if count_in_order else query.order_by(None)
    total = await session.scalar(sa.select(sa.func.count()).select_from(counted.subquery()))
    rows = await session.scalars(
        query.order_by(*order).offset(offset(page, page_size)).limit(page_size)
    )
    count = int(total or 0)
    return json_response(
        {
            "events": [event_wire(event) for event in rows],
            "total_count": count,
            "page": page,
            "page_size": page_size,
            "total_pages": total_pages(count, page_size),
        }
    )
