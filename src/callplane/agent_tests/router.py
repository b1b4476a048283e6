"""Tests and test runs of an agent (docs/agent-tests.md); agents' error shape."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import Path, Query
from starlette.responses import Response

from callplane.agent_tests import service, traffic
from callplane.agent_tests.spec import (
    ReplayCreate,
    ReplayEnvelope,
    RunCreate,
    TestCreate,
    TestEnvelope,
    TestList,
    TestRunEnvelope,
    TestRunList,
    TestUpdate,
)
from callplane.agent_tests.traffic import TrafficBody, TrafficEnvelope
from callplane.agents.schemas import Deleted
from callplane.http.deps import CurrentTenant, SessionDep
from callplane.http.families import STATUS
from callplane.http.responses import json_response
from callplane.http.routing import family_router
from callplane.kit.pagination import total_pages
from callplane.kit.scopes import AGENTS

router = family_router(STATUS, scopes=AGENTS, tags=["agents"])

Name = Annotated[str, Path(min_length=1, max_length=100)]
CONFLICT: dict[int | str, dict[str, Any]] = {409: {"description": "A test of that name exists"}}


@router.post(
    "/agents/{uuid}/tests",
    response_model=TestEnvelope,
    status_code=201,
    summary="Add a test to an agent",
    responses=CONFLICT,
)
async def create_agent_test(
    uuid: uuid.UUID, body: TestCreate, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """A named case: the caller's `turns` or a `caller` persona, tool `mocks`, what to `expect`
    and what to `judge`. Mocks must name tools of one of the agent's branch heads."""
    test = await service.create_test(session, tenant.organization_id, uuid, body)
    return json_response({"test": service.test_wire(test)}, 201)


@router.get("/agents/{uuid}/tests", response_model=TestList, summary="List an agent's tests")
async def list_agent_tests(uuid: uuid.UUID, session: SessionDep, tenant: CurrentTenant) -> Response:
    """Every test of the agent, by name."""
    tests = await service.list_tests(session, tenant.organization_id, uuid)
    return json_response({"tests": [service.test_wire(t) for t in tests]})


@router.get("/agents/{uuid}/tests/{name}", response_model=TestEnvelope, summary="Get a test")
async def get_agent_test(
    uuid: uuid.UUID, name: Name, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """One test of the agent, by its name."""
    test = await service.get_test(session, tenant.organization_id, uuid, name)
    return json_response({"test": service.test_wire(test)})


@router.patch(
    "/agents/{uuid}/tests/{name}",
    response_model=TestEnvelope,
    summary="Change a test",
    responses=CONFLICT,
)
async def update_agent_test(
    uuid: uuid.UUID, name: Name, body: TestUpdate, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Only the keys given change (`turns` replaces `caller` and the other way round); the
    result is validated as a whole test."""
    test = await service.update_test(session, tenant.organization_id, uuid, name, body)
    return json_response({"test": service.test_wire(test)})


@router.delete("/agents/{uuid}/tests/{name}", response_model=Deleted, summary="Delete a test")
async def delete_agent_test(
    uuid: uuid.UUID, name: Name, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Runs already asked for keep their copy of it."""
    await service.delete_test(session, tenant.organization_id, uuid, name)
    return json_response({"success": True})


@router.post(
    "/agents/{uuid}/test_runs",
    response_model=TestRunEnvelope,
    status_code=201,
    summary="Run tests on a branch or commit",
)
async def create_test_run(
    uuid: uuid.UUID, body: RunCreate, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """The run starts `running` and is worked through by the workers; poll it until its status
    is `passed`, `failed` or `error`."""
    run = await service.start_run(
        session, tenant.organization_id, uuid, ref=body.ref, names=body.tests, mode=body.mode
    )
    return json_response({"test_run": service.run_wire(run)}, 201)


@router.get("/agents/{uuid}/test_runs", response_model=TestRunList, summary="List test runs")
async def list_test_runs(
    uuid: uuid.UUID,
    session: SessionDep,
    tenant: CurrentTenant,
    commit_id: Annotated[
        uuid.UUID | None, Query(description="Only the runs of this commit")
    ] = None,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=100)] = 20,
) -> Response:
    """Newest first; with `commit_id`, only the runs of that commit."""
    runs, total = await service.list_runs(
        session, tenant.organization_id, uuid, commit_id=commit_id, page=page, page_size=page_size
    )
    return json_response(
        {
            "test_runs": [service.run_wire(r) for r in runs],
            "total_count": total,
            "page": page,
            "page_size": page_size,
            "total_pages": total_pages(total, page_size),
        }
    )


@router.get(
    "/agents/{uuid}/test_runs/{run_id}", response_model=TestRunEnvelope, summary="Get a test run"
)
async def get_test_run(
    uuid: uuid.UUID, run_id: uuid.UUID, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """The run with each test's result: every repetition's failures, transcript and reply
    latencies (audio mode)."""
    run = await service.get_run(session, tenant.organization_id, uuid, run_id, "tests")
    return json_response({"test_run": service.run_wire(run)})


@router.post(
    "/agents/{uuid}/replays",
    response_model=ReplayEnvelope,
    status_code=201,
    summary="Replay real calls against a branch or commit",
)
async def create_replay(
    uuid: uuid.UUID, body: ReplayCreate, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """The caller's lines of `call_ids` (calls of this agent) or of its `last` completed calls,
    said again to `ref` in the background; a tool asked again with the same arguments gets the
    original answer. 404 for a call that is not this agent's."""
    run = await service.start_replay(
        session, tenant.organization_id, uuid, ref=body.ref, call_ids=body.call_ids, last=body.last
    )
    return json_response({"replay": service.replay_wire(run)}, 201)


@router.get(
    "/agents/{uuid}/replays/{replay_id}", response_model=ReplayEnvelope, summary="Get a replay"
)
async def get_replay(
    uuid: uuid.UUID, replay_id: uuid.UUID, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Per call: its tool calls and whether the agent ended it, before and after, with the new
    transcript and summary. `status` is `done` once every call was replayed."""
    run = await service.get_run(session, tenant.organization_id, uuid, replay_id, "replay")
    return json_response({"replay": service.replay_wire(run)})


@router.put(
    "/agents/{uuid}/traffic", response_model=TrafficEnvelope, summary="Split calls over branches"
)
async def put_traffic(
    uuid: uuid.UUID, body: TrafficBody, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Calls that name neither branch nor commit (an inbound number routed to the agent without a
    branch, `POST /calls` with only `agent_id`) go to one of 2–5 branches by weight (summing to
    100); the same caller's number always meets the same branch."""
    splits = await traffic.set_traffic(
        session, tenant.organization_id, uuid, body.model_dump()["splits"]
    )
    return json_response({"traffic": {"splits": splits}})


@router.get("/agents/{uuid}/traffic", response_model=TrafficEnvelope, summary="Get the split")
async def get_traffic(uuid: uuid.UUID, session: SessionDep, tenant: CurrentTenant) -> Response:
    """The agent's traffic split; no splits: every such call runs main."""
    splits = await traffic.get_traffic(session, tenant.organization_id, uuid)
    return json_response({"traffic": {"splits": splits}})


@router.delete("/agents/{uuid}/traffic", response_model=TrafficEnvelope, summary="Remove the split")
async def delete_traffic(uuid: uuid.UUID, session: SessionDep, tenant: CurrentTenant) -> Response:
    """Every call that names no branch runs main again."""
    splits = await traffic.set_traffic(session, tenant.organization_id, uuid, None)
    return json_response({"traffic": {"splits": splits}})
