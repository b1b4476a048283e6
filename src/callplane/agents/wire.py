"""The wire forms of the Agent, Branch and Commit (docs/agents.md), built on purpose from rows."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.agents.refs import MAIN
from callplane.kit.tenancy import select_owned
from callplane.models.agents import Agent, AgentBranch, AgentCommit


async def branches_of(
    session: AsyncSession, organization_id: int, agent_ids: Sequence[int]
) -> dict[int, list[AgentBranch]]:
    found: dict[int, list[AgentBranch]] = {a: [] for a in agent_ids}
    rows = await session.scalars(
        select_owned(AgentBranch, organization_id)
        .where(AgentBranch.agent_id.in_(list(agent_ids)))
        .order_by(AgentBranch.agent_id, AgentBranch.name)
    )
    for branch in rows:
        found[branch.agent_id].append(branch)
    return found


def branch_wire(branch: AgentBranch) -> dict[str, Any]:
    return {
        "id": str(branch.id),
        "name": branch.name,
        "head": str(branch.head),
        "created_at": branch.created_at,
        "updated_at": branch.updated_at,
    }


def commit_wire(
    commit: AgentCommit, agent_uuid: uuid.UUID, *, config: bool = True
) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "id": str(commit.id),
        "agent_id": str(agent_uuid),
        "parents": list(commit.parents),
        "branch": commit.branch,
        "message": commit.message,
        "author": commit.author,
    }
    if config:
        wire["config"] = commit.config
    wire["created_at"] = commit.created_at
    return wire


async def agents_wire(
    session: AsyncSession, organization_id: int, agents: Sequence[Agent]
) -> list[dict[str, Any]]:
    """Agents with their branches and main's config: one query for each, whatever the count."""
    branches = await branches_of(session, organization_id, [a.id for a in agents])
    heads = {
        b.head for agent_branches in branches.values() for b in agent_branches if b.name == MAIN
    }
    configs: dict[uuid.UUID, dict[str, Any]] = {}
    if heads:
        rows = await session.execute(
            select_owned(AgentCommit, organization_id, AgentCommit.id, AgentCommit.config).where(
                AgentCommit.id.in_(list(heads))
            )
        )
        configs = {commit_id: config for commit_id, config in rows}
    wires = []
    for agent in agents:
        main = next((b for b in branches[agent.id] if b.name == MAIN), None)
        wires.append(
            {
                "id": str(agent.uuid),
                "name": agent.name,
                "default_branch": MAIN,
                "branches": [branch_wire(b) for b in branches[agent.id]],
                "config": configs.get(main.head, {}) if main else {},
                "merge_requires_passing_tests": agent.merge_requires_passing_tests,
                "created_at": agent.created_at,
                "updated_at": agent.updated_at,
            }
        )
    return wires


async def agent_wire(session: AsyncSession, organization_id: int, agent: Agent) -> dict[str, Any]:
    return (await agents_wire(session, organization_id, [agent]))[0]
