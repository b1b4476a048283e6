"""An agent's Tests tab: its test cases, a button that runs them on the branch shown, and the
latest runs with each failing expectation highlighted and every transcript. Same services as
the API (``agent_tests``); the runs are worked through by the workers, as the API's are."""

from __future__ import annotations

import json
import uuid
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response

from callplane.agent_tests import service
from callplane.agent_tests.gate import gate_problems
from callplane.agent_tests.spec import TestCreate
from callplane.agents import wire
from callplane.agents.refs import MAIN
from callplane.agents.service import get_agent, resolve_ref
from callplane.dashboard.agents import _go
from callplane.dashboard.forms import fields
from callplane.dashboard.rendering import render
from callplane.dashboard.routing import CurrentPerson, dashboard_router
from callplane.errors import Conflict, InvalidInput
from callplane.http.deps import SessionDep
from callplane.kit.messages import field_messages
from callplane.users.service import Person

router = dashboard_router()
RUNS_SHOWN = 10
EXAMPLE = {
    "name": "books a cleaning",
    "turns": [{"user": "Can I come in for a cleaning on Monday?"}],
    "expect": {"said": "(?i)monday", "not_said": "(?i)sorry"},
}


async def _tests_page(
    request: Request,
    session: Any,
    person: Person,
    agent_uuid: uuid.UUID,
    branch: str,
    status: int = 200,
    errors: list[str] | None = None,
    draft: str | None = None,
) -> Response:
    org = person.organization_id
    agent = await get_agent(session, org, agent_uuid)
    shown = await wire.agent_wire(session, org, agent)
    names = [b["name"] for b in shown["branches"]]
    branch = branch if branch in names else MAIN
    head = await resolve_ref(session, org, agent.id, branch)
    tests = await service.list_tests(session, org, agent_uuid)
    runs, _ = await service.list_runs(
        session, org, agent_uuid, commit_id=None, page=1, page_size=RUNS_SHOWN
    )
    replays, _ = await service.list_runs(
        session, org, agent_uuid, commit_id=None, page=1, page_size=RUNS_SHOWN, kind="replay"
    )
    gate = None
    if agent.merge_requires_passing_tests and head is not None:
        gate = await gate_problems(session, org, agent, head.id)
    return render(
        request,
        "agent_tests.html",
        status,
        section="agents",
        agent=shown,
        branch=branch,
        branches=shown["branches"],
        head=head,
        tests=[service.test_wire(t) for t in tests],
        runs=[service.run_wire(r) for r in runs],
        replays=[(service.replay_wire(r), len(r.work.get("calls", []))) for r in replays],
        gate=gate,
        errors=errors or [],
        draft=draft if draft is not None else json.dumps(EXAMPLE, indent=2),
        notice=request.query_params.get("notice"),
    )


@router.get("/agents/{agent_uuid}/tests")
async def tests_page(
    request: Request,
    agent_uuid: uuid.UUID,
    session: SessionDep,
    person: CurrentPerson,
    branch: str = MAIN,
) -> Response:
    return await _tests_page(request, session, person, agent_uuid, branch)


@router.post("/agents/{agent_uuid}/tests")
async def add_test(
    request: Request, agent_uuid: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    form = await fields(request)
    branch, text = form.get("branch", MAIN), form.get("test", "")
    try:
        body = TestCreate.model_validate_json(text)
        await service.create_test(session, person.organization_id, agent_uuid, body)
    except ValidationError as exc:
        messages = field_messages(exc.errors(include_input=False, include_url=False))
        return await _tests_page(
            request, session, person, agent_uuid, branch, 422, messages[:20], text
        )
    except (InvalidInput, Conflict) as exc:
        return await _tests_page(
            request, session, person, agent_uuid, branch, exc.status_code, exc.errors, text
        )
    return _go(request, f"/agents/{agent_uuid}/tests", branch=branch, notice="Test added.")


@router.post("/agents/{agent_uuid}/tests/delete")
async def delete_test(
    request: Request, agent_uuid: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    form = await fields(request)
    branch = form.get("branch", MAIN)
    await service.delete_test(session, person.organization_id, agent_uuid, form.get("name", ""))
    return _go(request, f"/agents/{agent_uuid}/tests", branch=branch, notice="Test deleted.")


@router.post("/agents/{agent_uuid}/tests/run")
async def run_tests(
    request: Request, agent_uuid: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    form = await fields(request)
    branch = form.get("branch", MAIN)
    try:
        await service.start_run(
            session, person.organization_id, agent_uuid, ref=branch, names=None, mode="text"
        )
    except InvalidInput as exc:
        return await _tests_page(request, session, person, agent_uuid, branch, 422, exc.errors)
    return _go(
        request,
        f"/agents/{agent_uuid}/tests",
        branch=branch,
        notice=f"Tests started on {branch}; reload to see the results.",
    )
