"""Which agent, branch and commit each call ran, as a person reads them: the agent's name and the
commit's message beside its short id, each a link (two queries for a whole page of calls)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.kit.tenancy import select_owned
from callplane.models.agents import Agent, AgentBranch, AgentCommit
from callplane.models.calls import Call


@dataclass(frozen=True)
class CallAgent:
    agent_uuid: uuid.UUID
    name: str
    branch: str | None
    commit_id: str | None
    #: The commit message's first line.
    message: str | None

    @property
    def short_id(self) -> str:
        return (self.commit_id or "")[:8]


async def agents_of(
    session: AsyncSession, organization_id: int, calls: Iterable[Call]
) -> dict[uuid.UUID, CallAgent]:
    """Each call's agent by the call's id; calls without one are left out."""
    calls = [c for c in calls if c.agent_uuid is not None]
    agent_uuids = {c.agent_uuid for c in calls}
    commit_ids = set()
    for call in calls:
        try:
            commit_ids.add(uuid.UUID(call.agent_commit_id or ""))
        except ValueError:
            continue
    names: dict[uuid.UUID, str] = {}
    if agent_uuids:
        rows = await session.execute(
            select_owned(Agent, organization_id, Agent.uuid, Agent.name).where(
                Agent.uuid.in_(agent_uuids)
            )
        )
        names = {row.uuid: row.name for row in rows}
    messages: dict[str, str] = {}
    if commit_ids:
        rows = await session.execute(
            select_owned(AgentCommit, organization_id, AgentCommit.id, AgentCommit.message).where(
                AgentCommit.id.in_(commit_ids)
            )
        )
        messages = {
            str(row.id): (row.message or "").splitlines()[0] if row.message else "" for row in rows
        }
    found = {}
    for call in calls:
        assert call.agent_uuid is not None
        found[call.id] = CallAgent(
            agent_uuid=call.agent_uuid,
            name=names.get(call.agent_uuid, "(deleted agent)"),
            branch=call.agent_branch_name,
            commit_id=call.agent_commit_id,
            message=messages.get(call.agent_commit_id or ""),
        )
    return found


async def agent_choices(session: AsyncSession, organization_id: int) -> list[tuple[str, str]]:
    """(uuid, name) of the organization's agents, by name, for the filter."""
    rows = await session.execute(
        select_owned(Agent, organization_id, Agent.uuid, Agent.name)
        .where(Agent.archived.is_(False))
        .order_by(Agent.name, Agent.id)
    )
    return [(str(row.uuid), row.name) for row in rows]


async def branch_choices(session: AsyncSession, organization_id: int) -> dict[str, list[str]]:
    """Each agent's branch names (by agent uuid), main first, for "Place a call"."""
    rows = await session.execute(
        select_owned(AgentBranch, organization_id, Agent.uuid, AgentBranch.name)
        .join(Agent, Agent.id == AgentBranch.agent_id)
        .where(Agent.organization_id == organization_id, Agent.archived.is_(False))
        .order_by(AgentBranch.name != "main", AgentBranch.name)
    )
    found: dict[str, list[str]] = {}
    for agent_uuid, name in rows:
        found.setdefault(str(agent_uuid), []).append(name)
    return found


@dataclass(frozen=True)
class CommitLabel:
    agent_uuid: uuid.UUID
    agent_name: str
    #: The commit message's first line.
    message: str


async def commit_labels(
    session: AsyncSession, organization_id: int, commit_ids: Iterable[str]
) -> dict[str, CommitLabel]:
    """Each commit's agent and message by the commit's id (ids that are no commit are left out)."""
    wanted = set()
    for commit_id in commit_ids:
        try:
            wanted.add(uuid.UUID(commit_id))
        except ValueError:
            continue
    if not wanted:
        return {}
    rows = await session.execute(
        select_owned(AgentCommit, organization_id, AgentCommit.id, AgentCommit.message)
        .add_columns(Agent.uuid, Agent.name)
        .join(Agent, Agent.id == AgentCommit.agent_id)
        .where(Agent.organization_id == organization_id, AgentCommit.id.in_(wanted))
    )
    return {
        str(commit_id): CommitLabel(agent_uuid, name, _first_line(message))
        for commit_id, message, agent_uuid, name in rows
    }


def _first_line(message: str | None) -> str:
    return message.splitlines()[0] if message else ""
