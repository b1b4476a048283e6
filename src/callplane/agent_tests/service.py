"""Tests of an agent and the runs that prove commits with them. Services flush, never commit.

Mocks are checked when a test is written against the tools of every branch head of the agent
(a test may be written for a tool that exists only on a feature branch), and again when it runs
against the commit under test (a mock for a tool that commit lacks fails that test, saying so).
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.agent_tests.replaying import replay_work
from callplane.agent_tests.running import tools_of
from callplane.agent_tests.spec import TestCreate, TestUpdate, validate_spec
from callplane.agents.service import get_agent, resolve_ref
from callplane.errors import Conflict, InvalidInput, NotFound
from callplane.kit import wakeups
from callplane.kit.pagination import offset
from callplane.kit.tenancy import select_owned
from callplane.models.agent_tests import AgentRun, AgentTest
from callplane.models.agents import Agent, AgentBranch, AgentCommit
from callplane.models.base import utcnow

TEST_NOT_FOUND = "Test not found"
RUN_NOT_FOUND = "Test run not found"


def test_wire(test: AgentTest) -> dict[str, Any]:
    spec = test.spec
    return {
        "id": str(test.id),
        "name": test.name,
        **{key: spec[key] for key in ("turns", "caller", "contact") if key in spec},
        "params": spec.get("params", {}),
        "mocks": spec.get("mocks", {}),
        "expect": spec.get("expect", {}),
        "judge": spec.get("judge", []),
        "repeat": spec.get("repeat", 1),
        "pass_rate": spec.get("pass_rate", 1.0),
        "created_at": test.created_at,
        "updated_at": test.updated_at,
    }


def run_wire(run: AgentRun) -> dict[str, Any]:
    return {
        "id": str(run.id),
        "ref": run.ref,
        "commit_id": str(run.commit_id),
        "mode": run.mode,
        "status": run.status,
        "results": run.results,
        "error": run.error,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
    }


async def _known_tools(session: AsyncSession, organization_id: int, agent: Agent) -> set[str]:
    configs = await session.scalars(
        select_owned(AgentCommit, organization_id, AgentCommit.config)
        .join(
            AgentBranch,
            (AgentBranch.organization_id == AgentCommit.organization_id)
            & (AgentBranch.head == AgentCommit.id),
        )
        .where(AgentBranch.agent_id == agent.id)
    )
    return set().union(*(tools_of(config) for config in configs))


async def _checked(
    session: AsyncSession, organization_id: int, agent: Agent, spec: dict[str, Any]
) -> dict[str, Any]:
    stored = validate_spec(spec)
    unknown = sorted(
        set(stored.get("mocks", {})) - await _known_tools(session, organization_id, agent)
    )
    if unknown:
        failure = InvalidInput(f"mocks.{unknown[0]}: the agent has no tool {unknown[0]}")
        failure.errors = [f"mocks.{name}: the agent has no tool {name}" for name in unknown]
        raise failure
    return stored


async def _find(
    session: AsyncSession, organization_id: int, agent: Agent, name: str
) -> AgentTest | None:
    test: AgentTest | None = await session.scalar(
        select_owned(AgentTest, organization_id).where(
            AgentTest.agent_id == agent.id, AgentTest.name == name
        )
    )
    return test


async def _save(session: AsyncSession, test: AgentTest) -> None:
    try:
        async with session.begin_nested():
            session.add(test)
            await session.flush()
    except IntegrityError:
        raise Conflict(f"A test named {test.name} already exists") from None


async def create_test(
    session: AsyncSession, organization_id: int, agent_uuid: uuid.UUID, body: TestCreate
) -> AgentTest:
    agent = await get_agent(session, organization_id, agent_uuid)
    spec = await _checked(session, organization_id, agent, body.model_dump(exclude={"name"}))
    if await _find(session, organization_id, agent, body.name) is not None:
        raise Conflict(f"A test named {body.name} already exists")
    now = utcnow()
    test = AgentTest(
        organization_id=organization_id,
        id=uuid.uuid4(),
        agent_id=agent.id,
        name=body.name,
        spec=spec,
        created_at=now,
        updated_at=now,
    )
    await _save(session, test)
    return test


async def list_tests(
    session: AsyncSession, organization_id: int, agent_uuid: uuid.UUID
) -> list[AgentTest]:
    agent = await get_agent(session, organization_id, agent_uuid)
    return list(
        await session.scalars(
            select_owned(AgentTest, organization_id)
            .where(AgentTest.agent_id == agent.id)
            .order_by(AgentTest.name)
        )
    )


async def get_test(
    session: AsyncSession, organization_id: int, agent_uuid: uuid.UUID, name: str
) -> AgentTest:
    agent = await get_agent(session, organization_id, agent_uuid)
    test = await _find(session, organization_id, agent, name)
    if test is None:
        raise NotFound(TEST_NOT_FOUND)
    return test


async def update_test(
    session: AsyncSession,
    organization_id: int,
    agent_uuid: uuid.UUID,
    name: str,
    body: TestUpdate,
) -> AgentTest:
    agent = await get_agent(session, organization_id, agent_uuid)
    test = await _find(session, organization_id, agent, name)
    if test is None:
        raise NotFound(TEST_NOT_FOUND)
    changes = body.model_dump(exclude_unset=True)
    new_name = changes.pop("name", None)
    spec = {**test.spec, **changes}
    # Giving the other kind of caller replaces the one stored: a test has exactly one.
    if "turns" in changes and "caller" not in changes:
        spec.pop("caller", None)
    if "caller" in changes and "turns" not in changes:
        spec.pop("turns", None)
    test.spec = await _checked(session, organization_id, agent, spec)
    if new_name and new_name != test.name:
        if await _find(session, organization_id, agent, new_name) is not None:
            raise Conflict(f"A test named {new_name} already exists")
        test.name = new_name
    test.updated_at = utcnow()
    await _save(session, test)
    return test


async def delete_test(
    session: AsyncSession, organization_id: int, agent_uuid: uuid.UUID, name: str
) -> None:
    test = await get_test(session, organization_id, agent_uuid, name)
    await session.delete(test)
    await session.flush()


async def start_run(
    session: AsyncSession,
    organization_id: int,
    agent_uuid: uuid.UUID,
    *,
    ref: str,
    names: list[str] | None,
    mode: str,
) -> AgentRun:
    """A run of the named tests (all by default) on ``ref``, for the workers to take. The tests
    are copied into the run: changing or deleting one later does not change the run."""
    agent = await get_agent(session, organization_id, agent_uuid)
    commit = await resolve_ref(session, organization_id, agent.id, ref)
    if commit is None:
        raise InvalidInput("ref: no such branch or commit of this agent", loc=("body",))
    tests = await list_tests(session, organization_id, agent_uuid)
    if names is not None:
        by_name = {t.name: t for t in tests}
        unknown = [n for n in dict.fromkeys(names) if n not in by_name]
        if unknown:
            raise InvalidInput(f"tests: no test named {unknown[0]}", loc=("body",))
        tests = [by_name[n] for n in dict.fromkeys(names)]
    if not tests:
        raise InvalidInput("tests: the agent has no tests to run", loc=("body",))
    now = utcnow()
    run = AgentRun(
        organization_id=organization_id,
        id=uuid.uuid4(),
        agent_id=agent.id,
        kind="tests",
        ref=ref,
        commit_id=commit.id,
        mode=mode,
        status="running",
        work={"tests": [{"name": t.name, **t.spec} for t in tests]},
        results=[],
        attempts=0,
        created_at=now,
        started_at=now,
    )
    session.add(run)
    await session.flush()
    await wakeups.announce(session, wakeups.AGENT_RUNS)
    return run


async def get_run(
    session: AsyncSession, organization_id: int, agent_uuid: uuid.UUID, run_id: uuid.UUID, kind: str
) -> AgentRun:
    agent = await get_agent(session, organization_id, agent_uuid)
    run: AgentRun | None = await session.scalar(
        select_owned(AgentRun, organization_id).where(
            AgentRun.agent_id == agent.id, AgentRun.id == run_id, AgentRun.kind == kind
        )
    )
    if run is None:
        raise NotFound(RUN_NOT_FOUND if kind == "tests" else "Replay not found")
    return run


async def list_runs(
    session: AsyncSession,
    organization_id: int,
    agent_uuid: uuid.UUID,
    *,
    commit_id: uuid.UUID | None,
    page: int,
    page_size: int,
    kind: str = "tests",
) -> tuple[list[AgentRun], int]:
    agent = await get_agent(session, organization_id, agent_uuid)
    query = select_owned(AgentRun, organization_id).where(
        AgentRun.agent_id == agent.id, AgentRun.kind == kind
    )
    if commit_id is not None:
        query = query.where(AgentRun.commit_id == commit_id)
    total = await session.scalar(query.with_only_columns(func.count()).order_by(None)) or 0
    runs = await session.scalars(
        query.order_by(AgentRun.created_at.desc(), AgentRun.id.desc())
        .offset(offset(page, page_size))
        .limit(page_size)
    )
    return list(runs), total


async def start_replay(
    session: AsyncSession,
    organization_id: int,
    agent_uuid: uuid.UUID,
    *,
    ref: str,
    call_ids: list[uuid.UUID] | None,
    last: int | None,
) -> AgentRun:
    agent = await get_agent(session, organization_id, agent_uuid)
    commit = await resolve_ref(session, organization_id, agent.id, ref)
    if commit is None:
        raise InvalidInput("ref: no such branch or commit of this agent", loc=("body",))
    work = await replay_work(session, organization_id, agent.uuid, call_ids=call_ids, last=last)
    now = utcnow()
    run = AgentRun(
        organization_id=organization_id,
        id=uuid.uuid4(),
        agent_id=agent.id,
        kind="replay",
        ref=ref,
        commit_id=commit.id,
        mode="text",
        status="running",
        work=work,
        results=[],
        attempts=0,
        created_at=now,
        started_at=now,
    )
    session.add(run)
    await session.flush()
    await wakeups.announce(session, wakeups.AGENT_RUNS)
    return run


def replay_wire(run: AgentRun) -> dict[str, Any]:
    return {
        "id": str(run.id),
        "ref": run.ref,
        "commit_id": str(run.commit_id),
        "status": run.status,
        "calls": run.results,
        "error": run.error,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
    }
