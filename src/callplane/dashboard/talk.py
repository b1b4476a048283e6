""" "Talk to this agent": a web call from the dashboard, with a live transcript (docs/web-calls.md).

The page asks for a web call token for its own origin (a POST with the session's CSRF token),
then starts the call with ``callplane-web.js``, as any website would: the dashboard holds no
API key either. ``?branch=`` or ``?commit=`` picks the agent's version.
"""

from __future__ import annotations

import uuid

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response

from callplane.dashboard.rendering import render
from callplane.dashboard.routing import CurrentPerson, dashboard_router
from callplane.errors import InvalidInput, NotFound
from callplane.http.deps import SessionDep
from callplane.http.responses import json_response
from callplane.kit.tenancy import select_owned
from callplane.models.agents import Agent
from callplane.web_calls.schemas import WebCallTokenCreate
from callplane.web_calls.service import mint_token

router = dashboard_router()


async def _agent(session: SessionDep, organization_id: int, agent_uuid: uuid.UUID) -> Agent:
    agent: Agent | None = await session.scalar(
        select_owned(Agent, organization_id).where(Agent.uuid == agent_uuid)
    )
    if agent is None:
        raise NotFound("No such agent.")
    return agent


@router.get("/agents/{agent_uuid}/talk")
async def talk_page(
    request: Request,
    agent_uuid: uuid.UUID,
    session: SessionDep,
    person: CurrentPerson,
    branch: str | None = None,
    commit: str | None = None,
) -> Response:
    agent = await _agent(session, person.organization_id, agent_uuid)
    base: str = request.scope.get("root_path", "")
    return render(
        request,
        "talk.html",
        section="agents",
        agent=agent,
        branch=branch,
        commit=commit,
        api_base=base.removesuffix("/dashboard"),
    )


@router.post("/agents/{agent_uuid}/talk/token")
async def talk_token(
    request: Request,
    agent_uuid: uuid.UUID,
    session: SessionDep,
    person: CurrentPerson,
    branch: str | None = None,
    commit: str | None = None,
) -> Response:
    await _agent(session, person.organization_id, agent_uuid)
    try:
        body = WebCallTokenCreate(
            agent_id=agent_uuid,
            agent_branch_name=branch or None,
            agent_commit_id=commit or None,
            allowed_origin=request.headers.get("origin", ""),
            expires_in_seconds=60,
        )
    except ValidationError:
        raise InvalidInput("This page's origin or the agent's version is not valid.") from None
    token, expires_at = await mint_token(session, person.organization_id, body)
    return json_response({"token": token, "expires_at": expires_at}, 201)
