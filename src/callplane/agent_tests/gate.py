"""The merge gate: while an agent has ``merge_requires_passing_tests``, a branch merges only when
every test of the agent passed in a finished run on the branch head's commit.

A test's latest finished result on that commit counts (a later failing run undoes an earlier
pass). An agent without tests has nothing to prove: the gate lets it through.
"""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.errors import Conflict
from callplane.kit.tenancy import select_owned
from callplane.models.agent_tests import AgentRun, AgentTest
from callplane.models.agents import Agent


async def require_passing_tests(
    session: AsyncSession, organization_id: int, agent: Agent, branch: str, commit_id: uuid.UUID
) -> None:
    if not agent.merge_requires_passing_tests:
        return
    problems = await gate_problems(session, organization_id, agent, commit_id)
    if problems:
        raise Conflict(
            f"Merging {branch} needs a passing run of every test on its head ({commit_id}): "
            + "; ".join(problems),
            errors=problems,
        )


async def gate_problems(
    session: AsyncSession, organization_id: int, agent: Agent, commit_id: uuid.UUID
) -> list[str]:
    """``failing: NAME`` and ``missing: NAME`` for each test that has not passed on the commit."""
    names = list(
        await session.scalars(
            select_owned(AgentTest, organization_id, AgentTest.name)
            .where(AgentTest.agent_id == agent.id)
            .order_by(AgentTest.name)
        )
    )
    runs = await session.scalars(
        select_owned(AgentRun, organization_id, AgentRun.results)
        .where(
            AgentRun.agent_id == agent.id,
            AgentRun.commit_id == commit_id,
            AgentRun.kind == "tests",
            AgentRun.status.in_(("passed", "failed")),
        )
        .order_by(AgentRun.finished_at.desc(), AgentRun.id)
    )
    latest: dict[str, bool] = {}
    for results in runs:
        for result in results:
            latest.setdefault(result["test"], bool(result["passed"]))
    problems = [f"failing: {n}" for n in names if latest.get(n) is False]
    problems += [f"missing: {n}" for n in names if n not in latest]
    return problems
