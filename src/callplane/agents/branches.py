"""Branches of an agent (docs/agents.md): create, move (a rollback is one request), delete, and
merge — already contained, fast-forward, or three-way against the nearest common ancestor.
Services flush, never commit."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.agent_tests.gate import require_passing_tests
from callplane.agents.config import validate_config
from callplane.agents.merge import MergeConflict, ancestors, merge_configs, nearest_common_ancestor
from callplane.agents.refs import MAIN, branch_name_problem
from callplane.agents.service import (
    BRANCH_NOT_FOUND,
    find_branch,
    find_commit,
    get_agent,
    head_commit,
    move_head,
    parents_map,
    resolve_ref,
    routed_numbers,
    touch_agent,
)
from callplane.errors import Conflict, InvalidInput, NotFound
from callplane.models.agents import Agent, AgentBranch, AgentCommit
from callplane.models.base import utcnow


async def create_branch(
    session: AsyncSession, organization_id: int, agent_uuid: uuid.UUID, name: str, start: str
) -> AgentBranch:
    problem = branch_name_problem(name)
    if problem:
        raise InvalidInput(f"name: {problem}", loc=("body",))
    agent = await get_agent(session, organization_id, agent_uuid)
    commit = await resolve_ref(session, organization_id, agent.id, start)
    if commit is None:
        raise InvalidInput("from: no such branch or commit of this agent", loc=("body",))
    if await find_branch(session, organization_id, agent.id, name) is not None:
        raise Conflict(f"Branch {name} already exists")
    now = utcnow()
    branch = AgentBranch(
        organization_id=organization_id,
        id=uuid.uuid4(),
        agent_id=agent.id,
        name=name,
        head=commit.id,
        created_at=now,
        updated_at=now,
    )
    session.add(branch)
    await session.flush()
    await touch_agent(session, organization_id, agent.id)
    return branch


async def _branch_or_404(
    session: AsyncSession, organization_id: int, agent: Agent, name: str
) -> AgentBranch:
    branch = await find_branch(session, organization_id, agent.id, name)
    if branch is None:
        raise NotFound(BRANCH_NOT_FOUND)
    return branch


async def move_branch(
    session: AsyncSession,
    organization_id: int,
    agent_uuid: uuid.UUID,
    name: str,
    head: uuid.UUID,
    expected_head: uuid.UUID | None,
) -> AgentBranch:
    agent = await get_agent(session, organization_id, agent_uuid)
    branch = await _branch_or_404(session, organization_id, agent, name)
    if await find_commit(session, organization_id, agent.id, head) is None:
        raise InvalidInput("head: no such commit of this agent", loc=("body",))
    if expected_head is not None and expected_head != branch.head:
        raise Conflict(f"expected_head is not the head of branch {name}")
    return await move_head(session, organization_id, agent.id, name, branch.head, head)


async def delete_branch(
    session: AsyncSession, organization_id: int, agent_uuid: uuid.UUID, name: str
) -> None:
    agent = await get_agent(session, organization_id, agent_uuid)
    branch = await _branch_or_404(session, organization_id, agent, name)
    if name == MAIN:
        raise Conflict("The main branch cannot be deleted")
    if await routed_numbers(session, organization_id, agent.id, name):
        raise Conflict(f"A phone number routes to branch {name}")
    if any(split["branch"] == name for split in agent.traffic or []):
        raise Conflict(f"The agent's traffic split sends calls to branch {name}")
    await session.delete(branch)
    await session.flush()
    await touch_agent(session, organization_id, agent.id)


async def merge_branch(
    session: AsyncSession,
    organization_id: int,
    agent_uuid: uuid.UUID,
    name: str,
    into: str,
    expected_head: uuid.UUID | None,
    *,
    author: str,
) -> AgentCommit:
    agent = await get_agent(session, organization_id, agent_uuid)
    source = await _branch_or_404(session, organization_id, agent, name)
    target = await find_branch(session, organization_id, agent.id, into)
    if target is None:
        raise InvalidInput("into: no such branch", loc=("body",))
    if target.id == source.id:
        raise InvalidInput("into: a branch cannot be merged into itself", loc=("body",))
    if expected_head is not None and expected_head != target.head:
        raise Conflict(f"expected_head is not the head of branch {into}")
    parents = await parents_map(session, organization_id, agent.id)
    theirs, ours = str(source.head), str(target.head)
    if theirs in ancestors(ours, parents):
        return await head_commit(session, organization_id, agent.id, target)
    await require_passing_tests(session, organization_id, agent, name, source.head)
    if ours in ancestors(theirs, parents):  # fast-forward: no new commit
        await move_head(session, organization_id, agent.id, into, target.head, source.head)
        return await head_commit(session, organization_id, agent.id, source)
    base_id = nearest_common_ancestor(ours, theirs, parents)
    base = (
        await find_commit(session, organization_id, agent.id, uuid.UUID(base_id))
        if base_id
        else None
    )
    ours_commit = await head_commit(session, organization_id, agent.id, target)
    theirs_commit = await head_commit(session, organization_id, agent.id, source)
    try:
        merged = merge_configs(
            base.config if base else {}, ours_commit.config, theirs_commit.config
        )
    except MergeConflict as conflict:
        raise Conflict(
            f"Merge conflict on {len(conflict.paths)} path(s)",
            errors=[f"conflict: {p}" for p in conflict.paths],
        ) from None
    try:
        merged = validate_config(merged)
    except InvalidInput as invalid:
        raise Conflict("The merged config is not valid", errors=invalid.errors) from None
    commit = AgentCommit(
        organization_id=organization_id,
        id=uuid.uuid4(),
        agent_id=agent.id,
        parents=[ours, theirs],
        branch=into,
        author=author,
        message=f"Merge branch {name} into {into}",
        config=merged,
        created_at=utcnow(),
    )
    await move_head(session, organization_id, agent.id, into, target.head, commit.id)
    session.add(commit)
    await session.flush()
    return commit
