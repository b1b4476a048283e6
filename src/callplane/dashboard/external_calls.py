"""External calls: the imported sessions, each with its legs, transcripts and audio."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Query
from starlette.requests import Request
from starlette.responses import Response

from callplane.dashboard.rendering import render
from callplane.dashboard.routing import CurrentPerson, dashboard_router, runtime_of
from callplane.external_calls.service import (
    PROCESSED_STATUS,
    get_external_call,
    list_external_calls,
)
from callplane.http.deps import SessionDep
from callplane.kit.pagination import total_pages
from callplane.recordings.service import sign_recordings

router = dashboard_router()
PAGE_SIZE = 20


@router.get("/external-calls")
async def external_calls_page(
    request: Request,
    session: SessionDep,
    person: CurrentPerson,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
) -> Response:
    calls, total, legs = await list_external_calls(session, person.organization_id, page, PAGE_SIZE)
    return render(
        request,
        "external_calls.html",
        section="external-calls",
        calls=calls,
        legs=legs,
        total=total,
        page=page,
        pages=total_pages(total, PAGE_SIZE),
    )


@router.get("/external-calls/{call_id}")
async def external_call_page(
    request: Request, call_id: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    call, legs = await get_external_call(session, person.organization_id, call_id)
    urls = await sign_recordings(runtime_of(request), legs)
    return render(
        request,
        "external_call.html",
        section="external-calls",
        call=call,
        legs=legs,
        urls=urls,
        processed=PROCESSED_STATUS,
    )
