"""The "Replay last N calls" view of an agent: a form on the Tests tab starts a replay through
the same service as the API (``agent_tests``), and the replay's page shows each call before and
after side by side, marking what changed. The workers do the replaying, as for the API."""

from __future__ import annotations

import json
import uuid
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response

from callplane.agent_tests import service
from callplane.agent_tests.spec import ReplayCreate
from callplane.agents.refs import MAIN
from callplane.agents.service import get_agent
from callplane.dashboard.agent_tests import _tests_page
from callplane.dashboard.agents import _go
from callplane.dashboard.forms import fields
from callplane.dashboard.rendering import render
from callplane.dashboard.routing import CurrentPerson, dashboard_router
from callplane.errors import InvalidInput
from callplane.http.deps import SessionDep
from callplane.kit.messages import field_messages

router = dashboard_router()


def _readable(tool_call: dict[str, Any]) -> str:
    """``book(day: Monday)``: what a person reads, not the JSON the brain sent."""
    arguments = tool_call.get("arguments") or {}
    shown = ", ".join(
        f"{key}: {value if isinstance(value, str) else json.dumps(value)}"
        for key, value in arguments.items()
    )
    return f"{tool_call.get('name', '?')}({shown})"


def _compared(call: dict[str, Any]) -> dict[str, Any]:
    tools, ended = call.get("tool_calls", {}), call.get("ended", {})
    return {
        **call,
        "tools_before": [_readable(t) for t in tools.get("before", [])],
        "tools_after": [_readable(t) for t in tools.get("after", [])],
        "tools_differ": not call.get("same_tool_calls", True),
        "ended_differ": ended.get("before") != ended.get("after"),
    }


@router.post("/agents/{agent_uuid}/replays")
async def start_replay(
    request: Request, agent_uuid: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    form = await fields(request)
    branch, last = form.get("branch", MAIN), form.get("last", "")
    org = person.organization_id
    try:
        body = ReplayCreate.model_validate({"ref": branch, "last": last or None})
        replay = await service.start_replay(
            session, org, agent_uuid, ref=body.ref, call_ids=None, last=body.last
        )
    except ValidationError as exc:
        messages = field_messages(exc.errors(include_input=False, include_url=False))
        return await _tests_page(request, session, person, agent_uuid, branch, 422, messages)
    except InvalidInput as exc:
        return await _tests_page(request, session, person, agent_uuid, branch, 422, exc.errors)
    return _go(request, f"/agents/{agent_uuid}/replays/{replay.id}")


@router.get("/agents/{agent_uuid}/replays/{replay_id}")
async def replay_page(
    request: Request,
    agent_uuid: uuid.UUID,
    replay_id: uuid.UUID,
    session: SessionDep,
    person: CurrentPerson,
) -> Response:
    org = person.organization_id
    agent = await get_agent(session, org, agent_uuid)
    run = await service.get_run(session, org, agent_uuid, replay_id, "replay")
    replay = service.replay_wire(run)
    return render(
        request,
        "agent_replay.html",
        section="agents",
        agent={"id": str(agent.uuid), "name": agent.name},
        replay=replay,
        asked=len(run.work.get("calls", [])),
        calls=[_compared(c) for c in replay["calls"]],
    )
