"""Calls: list with a status filter, detail (transcript, tags, analysis, recording), cancel while
enqueued, and a form that places a call through the API's own create rules."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import Query
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from callplane.calls import commands, events, service
from callplane.calls.schemas import CallCreate
from callplane.dashboard.call_agents import agent_choices, agents_of, branch_choices
from callplane.dashboard.call_tools import tool_answers, transfer_of
from callplane.dashboard.forms import fields
from callplane.dashboard.overview import call_turn_latencies
from callplane.dashboard.rendering import render
from callplane.dashboard.routing import CurrentPerson, dashboard_router, runtime_of
from callplane.errors import InvalidInput
from callplane.http.deps import SessionDep
from callplane.kit.pagination import total_pages
from callplane.kit.schemas import normalize_number
from callplane.models.calls import CALL_STATUSES, UNFINISHED_STATUSES
from callplane.voices.service import list_voices

router = dashboard_router()
PAGE_SIZE = 20


@router.get("/calls")
async def calls_page(
    request: Request,
    session: SessionDep,
    person: CurrentPerson,
    status: str | None = None,
    agent: str | None = None,
    number: str | None = None,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
) -> Response:
    # A filter that cannot match anything as typed is dropped rather than refused: a person
    # editing the address bar gets the whole list back, never an error page.
    status = status if status in CALL_STATUSES else None
    agent_uuid = _uuid_or_none(agent)
    wanted = _number_or_none(number)
    calls, total = await service.list_calls(
        session,
        person.organization_id,
        page=page,
        page_size=PAGE_SIZE,
        status=status,
        direction=None,
        created_after=None,
        created_before=None,
        agent_uuid=agent_uuid,
        number=wanted,
    )
    return render(
        request,
        "calls.html",
        section="calls",
        calls=calls,
        agents=await agents_of(session, person.organization_id, calls),
        agent_choices=await agent_choices(session, person.organization_id),
        total=total,
        page=page,
        pages=total_pages(total, PAGE_SIZE),
        status=status,
        agent=str(agent_uuid) if agent_uuid else "",
        number=number.strip() if wanted and number else "",
        statuses=CALL_STATUSES,
    )


def _uuid_or_none(value: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(value) if value else None
    except ValueError:
        return None


def _number_or_none(value: str | None) -> str | None:
    try:
        return normalize_number(value.strip()) if value and value.strip() else None
    except ValueError:
        return None


async def _new_call_page(
    request: Request,
    session: SessionDep,
    person: CurrentPerson,
    values: dict[str, str],
    errors: list[str],
    status_code: int = 200,
) -> Response:
    voices = await list_voices(session, person.organization_id)
    return render(
        request,
        "call_new.html",
        status_code,
        section="calls",
        voices=voices,
        agent_choices=await agent_choices(session, person.organization_id),
        branch_choices=await branch_choices(session, person.organization_id),
        values=values,
        errors=errors,
    )


@router.get("/calls/new")
async def new_call_page(request: Request, session: SessionDep, person: CurrentPerson) -> Response:
    return await _new_call_page(request, session, person, {}, [])


def _body(form: dict[str, str]) -> dict[str, Any]:
    """The form as the JSON body ``POST /v1/calls`` would receive (empty fields omitted)."""
    body: dict[str, Any] = {"to_number": form.get("to_number", "")}
    names = ("from_number", "voice_id", "first_message", "call_prompt", "language", "agent_id")
    for name in (*names, "agent_branch_name"):
        if form.get(name, "").strip():
            body[name] = form[name].strip()
    if "agent_id" not in body:
        body.pop("agent_branch_name", None)  # a branch means nothing without its agent
    if form.get("agent_speaks_first"):
        body["agent_speaks_first"] = True
    return body


def _messages(exc: ValidationError) -> list[str]:
    return [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]


@router.post("/calls")
async def place_call(request: Request, session: SessionDep, person: CurrentPerson) -> Response:
    form = await fields(request)
    try:
        body = CallCreate.model_validate(_body(form))
        call = await commands.place_call(session, runtime_of(request), person.organization_id, body)
    except ValidationError as exc:
        return await _new_call_page(request, session, person, form, _messages(exc), 422)
    except InvalidInput as exc:
        field = exc.loc[-1] if exc.loc else "body"
        return await _new_call_page(
            request, session, person, form, [f"{field}: {exc.message}"], 422
        )
    base = request.scope.get("root_path", "")
    return RedirectResponse(f"{base}/calls/{call.id}", 303)


@router.get("/calls/{call_id}")
async def call_page(
    request: Request, call_id: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    call = await service.get_call(session, person.organization_id, call_id)
    [wire] = await service.calls_wire(session, runtime_of(request), person.organization_id, [call])
    transcript = wire.get("transcripts") or []
    # One read of the events serves the timeline, the turn latencies, the tool uses and the
    # transfer.
    timeline = await events.list_call_events(session, person.organization_id, call_id)
    latency = call_turn_latencies(timeline, transcript)
    transfer, transfer_at = transfer_of(wire, transcript, timeline)
    agents = await agents_of(session, person.organization_id, [call])
    return render(
        request,
        "call.html",
        section="calls",
        agent=agents.get(call.id),
        unfinished=UNFINISHED_STATUSES,
        call=wire,
        latency=latency,
        events=timeline,
        answers=tool_answers(transcript, timeline),
        transfer=transfer,
        transfer_at=transfer_at,
        redactions=call.redactions,
    )


@router.post("/calls/{call_id}/cancel")
async def cancel(
    request: Request, call_id: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    await commands.cancel_call(session, runtime_of(request), person.organization_id, call_id)
    base = request.scope.get("root_path", "")
    return RedirectResponse(f"{base}/calls/{call_id}", 303)
