"""Agents, branches and commits (docs/agents.md). Services flush, never commit.

Moving a head is one conditional statement (``move_head``: ``UPDATE … WHERE head = :expected
RETURNING``): of many writers that read the same head, exactly one moves it, the others get 409
and their transaction (the commit row included) is rolled back by the unit of work.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass
from typing import Any

import json_merge_patch
from sqlalchemy import bindparam, func
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.agents import history
from callplane.agents.config import validate_config
from callplane.agents.diff import diff as diff_configs
from callplane.agents.refs import MAIN, as_commit_id
from callplane.agents.schemas import CommitCreate
from callplane.agents.traffic import pick_branch
from callplane.agents.wire import agents_wire
from callplane.errors import Conflict, InvalidInput, NotFound
from callplane.kit.driver import driver_of, fixed_statement
from callplane.kit.pagination import offset
from callplane.kit.tenancy import Tenant, same_organization, select_owned, update_owned
from callplane.models.agents import Agent, AgentBranch, AgentCommit
from callplane.models.base import utcnow
from callplane.models.knowledge import KnowledgeBase
from callplane.models.phone_numbers import PhoneNumber
from callplane.models.voices import Voice
from callplane.webhooks.signing import new_secret

AGENT_NOT_FOUND = "Agent not found"
BRANCH_NOT_FOUND = "Branch not found"
COMMIT_NOT_FOUND = "Commit not found"


def author_of(tenant: Tenant) -> str:
    return f"api_key:{tenant.api_key_id}"


# --- reading ------------------------------------------------------------------------------


async def get_agent(session: AsyncSession, organization_id: int, agent_uuid: uuid.UUID) -> Agent:
    agent: Agent | None = await session.scalar(
        select_owned(Agent, organization_id).where(
            Agent.uuid == agent_uuid, Agent.archived.is_(False)
        )
    )
    if agent is None:
        raise NotFound(AGENT_NOT_FOUND)
    return agent


async def find_branch(
    session: AsyncSession, organization_id: int, agent_id: int, name: str
) -> AgentBranch | None:
    branch: AgentBranch | None = await session.scalar(
        select_owned(AgentBranch, organization_id).where(
            AgentBranch.agent_id == agent_id, AgentBranch.name == name
        )
    )
    return branch


async def find_commit(
    session: AsyncSession, organization_id: int, agent_id: int, commit_id: uuid.UUID
) -> AgentCommit | None:
    commit: AgentCommit | None = await session.scalar(
        select_owned(AgentCommit, organization_id).where(
            AgentCommit.id == commit_id, AgentCommit.agent_id == agent_id
        )
    )
    return commit


async def resolve_ref(
    session: AsyncSession, organization_id: int, agent_id: int, ref: str
) -> AgentCommit | None:
    """The commit a ref names: a commit id of the agent, else the head of a branch so named."""
    commit_id = as_commit_id(ref)
    if commit_id is None:
        branch = await find_branch(session, organization_id, agent_id, ref)
        if branch is None:
            return None
        commit_id = branch.head
    return await find_commit(session, organization_id, agent_id, commit_id)


async def list_agents(
    session: AsyncSession, organization_id: int, *, page: int, page_size: int
) -> tuple[list[dict[str, Any]], int]:
    query = select_owned(Agent, organization_id).where(Agent.archived.is_(False))
    total = int(
        await session.scalar(
            select_owned(Agent, organization_id, func.count()).where(Agent.archived.is_(False))
        )
        or 0
    )
    agents = (
        await session.scalars(
            query.order_by(Agent.name, Agent.id).limit(page_size).offset(offset(page, page_size))
        )
    ).all()
    return await agents_wire(session, organization_id, agents), total


# --- agents -------------------------------------------------------------------------------


async def check_config_references(
    session: AsyncSession, organization_id: int, config: dict[str, Any], field: str = "config"
) -> None:
    voice = config.get("voice_id")
    if voice is not None:
        found = await session.scalar(
            select_owned(Voice, organization_id, Voice.id).where(Voice.id == uuid.UUID(voice))
        )
        if found is None:
            raise InvalidInput(f"{field}/voice_id: no such voice", loc=("body",))
    knowledge = [
        ("knowledge/knowledge_base_id", (config.get("knowledge") or {}).get("knowledge_base_id"))
    ]
    knowledge += [
        (f"tools/{n}/knowledge_base_id", tool.get("knowledge_base_id"))
        for n, tool in enumerate(config.get("tools", []))
        if tool.get("type") == "knowledge_search"
    ]
    for path, base in knowledge:
        if base is None:
            continue
        found = await session.scalar(
            select_owned(KnowledgeBase, organization_id, KnowledgeBase.id).where(
                KnowledgeBase.uuid == uuid.UUID(base)
            )
        )
        if found is None:
            raise InvalidInput(f"{field}/{path}: no such knowledge base", loc=("body",))


async def create_agent(
    session: AsyncSession,
    organization_id: int,
    *,
    name: str,
    config: dict[str, Any],
    message: str,
    author: str,
) -> tuple[Agent, str]:
    stored = validate_config(config)
    await check_config_references(session, organization_id, stored)
    secret = new_secret()
    now = utcnow()
    agent = Agent(
        organization_id=organization_id,
        uuid=uuid.uuid4(),
        name=name,
        archived=False,
        tools_secret=secret,
        created_at=now,
        updated_at=now,
    )
    session.add(agent)
    await session.flush()
    await add_first_commit(session, agent, stored, message=message, author=author, now=now)
    return agent, secret


async def add_first_commit(
    session: AsyncSession,
    agent: Agent,
    config: dict[str, Any],
    *,
    message: str,
    author: str,
    now: Any,
) -> AgentCommit:
    """``main`` and its first commit for a new agent (the API, fixtures and the demo)."""
    commit = AgentCommit(
        organization_id=agent.organization_id,
        id=uuid.uuid4(),
        agent_id=agent.id,
        parents=[],
        branch=MAIN,
        author=author,
        message=message,
        config=config,
        created_at=now,
    )
    session.add(commit)
    session.add(
        AgentBranch(
            organization_id=agent.organization_id,
            id=uuid.uuid4(),
            agent_id=agent.id,
            name=MAIN,
            head=commit.id,
            created_at=now,
            updated_at=now,
        )
    )
    await session.flush()
    return commit


async def update_agent(
    session: AsyncSession,
    organization_id: int,
    agent_uuid: uuid.UUID,
    *,
    name: str | None,
    merge_requires_passing_tests: bool | None,
) -> Agent:
    agent = await get_agent(session, organization_id, agent_uuid)
    if name is not None:
        agent.name = name
    if merge_requires_passing_tests is not None:
        agent.merge_requires_passing_tests = merge_requires_passing_tests
    agent.updated_at = utcnow()
    await session.flush()
    return agent


async def routed_numbers(
    session: AsyncSession, organization_id: int, agent_id: int, branch: str | None = None
) -> int:
    query = select_owned(PhoneNumber, organization_id, func.count()).where(
        PhoneNumber.agent_id == agent_id
    )
    if branch is not None:
        query = query.where(func.coalesce(PhoneNumber.agent_branch_name, MAIN) == branch)
    return int(await session.scalar(query) or 0)


async def archive_agent(session: AsyncSession, organization_id: int, agent_uuid: uuid.UUID) -> None:
    agent = await get_agent(session, organization_id, agent_uuid)
    if await routed_numbers(session, organization_id, agent.id):
        raise Conflict("A phone number routes to this agent; route it elsewhere first")
    await session.execute(
        update_owned(Agent, organization_id)
        .where(Agent.id == agent.id)
        .values(archived=True, updated_at=utcnow())
    )


async def rotate_tools_secret(
    session: AsyncSession, organization_id: int, agent_uuid: uuid.UUID
) -> str:
    agent = await get_agent(session, organization_id, agent_uuid)
    secret = new_secret()
    await session.execute(
        update_owned(Agent, organization_id)
        .where(Agent.id == agent.id)
        .values(tools_secret=secret, updated_at=utcnow())
    )
    return secret


# --- commits and heads --------------------------------------------------------------------


async def move_head(
    session: AsyncSession,
    organization_id: int,
    agent_id: int,
    branch: str,
    expected: uuid.UUID,
    new: uuid.UUID,
) -> AgentBranch:
    moved: AgentBranch | None = await session.scalar(
        update_owned(AgentBranch, organization_id)
        .where(
            AgentBranch.agent_id == agent_id,
            AgentBranch.name == branch,
            AgentBranch.head == expected,
        )
        .values(head=new, updated_at=utcnow())
        .returning(AgentBranch)
        .execution_options(synchronize_session=False, populate_existing=True)
    )
    if moved is None:
        raise Conflict(f"The head of branch {branch} moved; nothing was changed")
    await touch_agent(session, organization_id, agent_id)
    return moved


async def touch_agent(session: AsyncSession, organization_id: int, agent_id: int) -> None:
    """An agent shows its branches and main's config: moving a head, adding or deleting a
    branch changes what it shows, so its ``updated_at``."""
    await session.execute(
        update_owned(Agent, organization_id)
        .where(Agent.id == agent_id)
        .values(updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )


async def head_commit(
    session: AsyncSession, organization_id: int, agent_id: int, branch: AgentBranch
) -> AgentCommit:
    head = await find_commit(session, organization_id, agent_id, branch.head)
    if head is None:  # heads are only ever set to commits of the agent
        raise Conflict(f"The head of branch {branch.name} is missing")
    return head


async def create_commit(
    session: AsyncSession,
    organization_id: int,
    agent_uuid: uuid.UUID,
    body: CommitCreate,
    *,
    author: str,
) -> tuple[AgentCommit, bool]:
    """The new commit and True, or the head and False when the config equals the head's."""
    given = [n for n in ("config", "changes", "revert_to") if getattr(body, n) is not None]
    if len(given) != 1:
        raise InvalidInput("exactly one of config, changes or revert_to is required", loc=("body",))
    agent = await get_agent(session, organization_id, agent_uuid)
    branch = await find_branch(session, organization_id, agent.id, body.branch)
    if branch is None:
        raise InvalidInput("branch: no such branch", loc=("body",))
    if body.expected_head is not None and body.expected_head != branch.head:
        raise Conflict(f"expected_head is not the head of branch {branch.name}")
    head = await head_commit(session, organization_id, agent.id, branch)
    if body.config is not None:
        wanted, field = body.config, "config"
    elif body.changes is not None:
        wanted = json_merge_patch.merge(copy.deepcopy(head.config), body.changes)
        field = "changes"
    else:
        assert body.revert_to is not None
        target = await find_commit(session, organization_id, agent.id, body.revert_to)
        if target is None:
            raise InvalidInput("revert_to: no such commit of this agent", loc=("body",))
        wanted, field = target.config, "revert_to"
    config = validate_config(wanted, field="config" if field == "config" else field)
    await check_config_references(session, organization_id, config)
    if config == head.config:
        return head, False
    commit = AgentCommit(
        organization_id=organization_id,
        id=uuid.uuid4(),
        agent_id=agent.id,
        parents=[str(head.id)],
        branch=branch.name,
        author=author,
        message=body.message
        or (f"Revert to {body.revert_to}" if body.revert_to else "Update configuration"),
        config=config,
        created_at=utcnow(),
    )
    await move_head(session, organization_id, agent.id, branch.name, branch.head, commit.id)
    session.add(commit)
    await session.flush()
    return commit, True


async def get_commit(
    session: AsyncSession, organization_id: int, agent_uuid: uuid.UUID, commit_id: uuid.UUID
) -> tuple[Agent, AgentCommit]:
    agent = await get_agent(session, organization_id, agent_uuid)
    commit = await find_commit(session, organization_id, agent.id, commit_id)
    if commit is None:
        raise NotFound(COMMIT_NOT_FOUND)
    return agent, commit


async def parents_map(
    session: AsyncSession, organization_id: int, agent_id: int
) -> dict[str, list[str]]:
    rows = await session.execute(
        select_owned(AgentCommit, organization_id, AgentCommit.id, AgentCommit.parents).where(
            AgentCommit.agent_id == agent_id
        )
    )
    return {str(commit_id): list(parents) for commit_id, parents in rows}


async def list_commits(
    session: AsyncSession,
    organization_id: int,
    agent_uuid: uuid.UUID,
    *,
    branch: str | None,
    page: int,
    page_size: int,
) -> tuple[Agent, list[AgentCommit], int]:
    """Newest first. With ``branch``, only commits reachable from its head."""
    agent = await get_agent(session, organization_id, agent_uuid)
    query = select_owned(AgentCommit, organization_id).where(AgentCommit.agent_id == agent.id)
    newest_first = (AgentCommit.created_at.desc(), AgentCommit.id.desc())
    if branch is None:
        total = int(
            await session.scalar(
                select_owned(AgentCommit, organization_id, func.count()).where(
                    AgentCommit.agent_id == agent.id
                )
            )
            or 0
        )
        query = query.order_by(*newest_first).limit(page_size).offset(offset(page, page_size))
    else:
        found = await find_branch(session, organization_id, agent.id, branch)
        if found is None:
            raise InvalidInput("branch: no such branch", loc=("query", "branch"))
        ordered = await history.reachable(session, organization_id, agent.id, str(found.head))
        total = len(ordered)
        start = offset(page, page_size)
        shown = [uuid.UUID(c) for c in ordered[start : start + page_size]]
        query = query.where(AgentCommit.id.in_(shown)).order_by(*newest_first)
    commits = (await session.scalars(query)).all()
    return agent, list(commits), total


async def diff_refs(
    session: AsyncSession, organization_id: int, agent_uuid: uuid.UUID, before: str, after: str
) -> list[dict[str, Any]]:
    agent = await get_agent(session, organization_id, agent_uuid)
    configs = []
    for name, ref in (("from", before), ("to", after)):
        commit = await resolve_ref(session, organization_id, agent.id, ref)
        if commit is None:
            raise InvalidInput(f"{name}: no such branch or commit of this agent", loc=("query",))
        configs.append(commit.config)
    return diff_configs(configs[0], configs[1])


# --- for calls and the engine -------------------------------------------------------------


@dataclass(frozen=True)
class ResolvedAgent:
    """The commit a call runs, with the four SPEC fields it sets on the call."""

    agent_id: int
    agent_uuid: uuid.UUID
    agent_name: str
    branch_uuid: uuid.UUID | None
    branch_name: str | None
    commit_id: uuid.UUID
    config: dict[str, Any]


def _resolve(commit_on: Any) -> Any:
    """The agent, the named branch and a commit; outer joins so that a missing branch or commit
    is told apart from a missing agent."""
    branch_join = (
        same_organization(AgentBranch, Agent)
        & (AgentBranch.agent_id == Agent.id)
        & (AgentBranch.name == bindparam("branch"))
    )
    commit_join = same_organization(AgentCommit, Agent) & (AgentCommit.agent_id == Agent.id)
    return (
        select_owned(
            Agent,
            bindparam("org"),
            Agent.id,
            Agent.name,
            Agent.traffic,
            AgentBranch.id.label("branch_uuid"),
            AgentCommit.id.label("commit_id"),
            AgentCommit.branch,
            AgentCommit.config,
        )
        .outerjoin(AgentBranch, branch_join)
        .outerjoin(AgentCommit, commit_join & commit_on)
        .where(Agent.uuid == bindparam("uuid"), Agent.archived.is_(False))
    )


def _resolve_head() -> Any:
    return _resolve(AgentCommit.id == AgentBranch.head)


def _resolve_pinned() -> Any:
    return _resolve(AgentCommit.id == bindparam("commit"))


async def resolve_for_call(
    session: AsyncSession,
    organization_id: int,
    *,
    agent_uuid: uuid.UUID,
    branch_name: str | None = None,
    commit_id: uuid.UUID | None = None,
    other_party: str | None = None,
) -> ResolvedAgent:
    """The agent, branch and commit a new call runs (docs/agents.md); InvalidInput naming the body
    field when any is unknown, archived or another organization's. A pinned commit keeps the
    branch it was made on, when that branch still exists."""
    if commit_id is not None and branch_name is not None:
        raise InvalidInput(
            "agent_branch_name: give either agent_branch_name or agent_commit_id", loc=("body",)
        )
    # One statement in the common case, compiled once and run on the driver connection: this
    # runs on every POST /calls with an agent, where the ORM's per-statement work cost more
    # than the query.
    driver = await driver_of(session)
    pinned = commit_id is not None
    prepared = fixed_statement(
        "agents.resolve_pinned" if pinned else "agents.resolve_head",
        driver.dialect,
        _resolve_pinned if pinned else _resolve_head,
    )
    values = {"org": organization_id, "uuid": agent_uuid, "branch": branch_name or MAIN}
    if pinned:
        values["commit"] = commit_id
    row = await driver.fetchone(prepared, values)
    if row is None:
        raise InvalidInput("agent_id: no such agent", loc=("body",))
    # Neither branch nor commit named: the agent's traffic split may send this caller to
    # another branch than main (agents/traffic.py); one more statement only then.
    split_branch = (
        None if pinned or branch_name else pick_branch(row["traffic"], agent_uuid, other_party)
    )
    if split_branch not in (None, MAIN):
        values["branch"] = split_branch
        split_row = await driver.fetchone(prepared, values)
        if split_row is not None and split_row["commit_id"] is not None:
            row, branch_name = split_row, split_branch
    agent_id, branch_uuid, found_commit = row["id"], row["branch_uuid"], row["commit_id"]
    agent_name, made_on, config = row["name"], row["branch"], row["config"]
    if found_commit is None:
        if commit_id is not None:
            raise InvalidInput("agent_commit_id: no such commit of this agent", loc=("body",))
        raise InvalidInput("agent_branch_name: no such branch of this agent", loc=("body",))
    if commit_id is not None:
        branch = await find_branch(session, organization_id, agent_id, made_on)
        branch_uuid = branch.id if branch else None
    return ResolvedAgent(
        agent_id,
        agent_uuid,
        agent_name,
        branch_uuid,
        made_on if commit_id is not None else branch_name or MAIN,
        found_commit,
        config,
    )


@dataclass(frozen=True)
class CommitToRun:
    """What a worker needs of a call's pinned commit: its config, and of its agent the name
    (handoff metadata) and the tools secret (signing function tools)."""

    config: dict[str, Any]
    agent_name: str
    tools_secret: str | None


async def load_commit_to_run(
    session: AsyncSession, organization_id: int, commit_id: uuid.UUID
) -> CommitToRun | None:
    """A commit of the organization (what a call pinned) with its agent, in one query; None
    when the organization has no such commit."""
    row = (
        await session.execute(
            select_owned(
                AgentCommit, organization_id, AgentCommit.config, Agent.name, Agent.tools_secret
            )
            .join(Agent, same_organization(AgentCommit, Agent) & (Agent.id == AgentCommit.agent_id))
            .where(AgentCommit.id == commit_id)
        )
    ).first()
    if row is None:
        return None
    config, name, secret = row
    return CommitToRun(config=config, agent_name=name, tools_secret=secret)


async def resolve_branch_head(
    session: AsyncSession,
    organization_id: int,
    agent_id: int,
    branch_name: str | None,
    other_party: str | None = None,
) -> ResolvedAgent | None:
    """What an inbound call answered on a number routed to ``agent_id`` runs: the head of the
    number's branch at this moment; on main (a number's default), the branch the agent's
    traffic split picks for the caller, if it has one; None when the agent is archived or the
    branch is gone (the call then keeps the behaviour of a call without an agent)."""
    found = await _branch_head(session, organization_id, agent_id, branch_name or MAIN)
    if found is None:
        return None
    agent, resolved = found
    # A number routed to the agent without a branch stores main, its default: main is where a
    # split applies. A number routed to another branch keeps to it.
    if branch_name not in (None, MAIN):
        return resolved
    split_branch = pick_branch(agent.traffic, agent.uuid, other_party)
    if split_branch not in (None, MAIN):
        split = await _branch_head(session, organization_id, agent_id, str(split_branch))
        if split is not None:
            return split[1]
    return resolved


async def _branch_head(
    session: AsyncSession, organization_id: int, agent_id: int, name: str
) -> tuple[Agent, ResolvedAgent] | None:
    row = (
        await session.execute(
            select_owned(Agent, organization_id, Agent, AgentBranch.id, AgentCommit)
            .join(
                AgentBranch,
                (AgentBranch.organization_id == Agent.organization_id)
                & (AgentBranch.agent_id == Agent.id),
            )
            .join(
                AgentCommit,
                (AgentCommit.organization_id == AgentBranch.organization_id)
                & (AgentCommit.id == AgentBranch.head),
            )
            .where(Agent.id == agent_id, Agent.archived.is_(False), AgentBranch.name == name)
        )
    ).first()
    if row is None:
        return None
    agent, branch_uuid, commit = row
    return agent, ResolvedAgent(
        agent.id, agent.uuid, agent.name, branch_uuid, name, commit.id, commit.config
    )
