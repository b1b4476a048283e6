"""Fixture section: agents (docs/api-contract.md, docs/agents.md): ``config`` is the first commit on
``main``; ``branches`` are each one commit after main's."""

from __future__ import annotations

import uuid as uuid_module
from typing import Any
from uuid import UUID, uuid4

from pydantic import BaseModel, ConfigDict, Field

from callplane.agents.config import validate_config
from callplane.agents.refs import MAIN, branch_name_problem
from callplane.errors import InvalidInput
from callplane.fixtures import LoadContext, LoadError, parse_items, section
from callplane.kit.db import sync_id_sequence
from callplane.models.agents import Agent, AgentBranch, AgentCommit
from callplane.models.base import utcnow
from callplane.webhooks.signing import new_secret

FIXTURE_AUTHOR = "fixture"


class BranchItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64)
    config: dict[str, Any] = {}


class AgentItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: int | None = Field(default=None, ge=1, le=2**31 - 1)
    uuid: UUID | None = None
    name: str = Field(min_length=1, max_length=255)
    config: dict[str, Any] = {}
    branches: list[BranchItem] = Field(default=[], max_length=50)


def _checked(index: int, item: AgentItem) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    try:
        main = validate_config(item.config)
        branches = []
        for position, branch in enumerate(item.branches):
            problem = branch_name_problem(branch.name)
            if problem or branch.name == MAIN:
                raise LoadError(
                    f"agents[{index}].branches[{position}].name: {problem or 'main is taken'}"
                )
            branches.append((branch.name, validate_config(branch.config)))
    except InvalidInput as exc:
        raise LoadError(f"agents[{index}].{exc.message}") from None
    if len({name for name, _ in branches}) != len(branches):
        raise LoadError(f"agents[{index}].branches: names must be unique")
    return main, branches


@section("agents")
async def load_agents(context: LoadContext, items: list[Any]) -> list[Any]:
    parsed = parse_items("agents", items, AgentItem)
    configs = [_checked(index, item) for index, item in enumerate(parsed)]
    agents = [
        Agent(
            organization_id=context.organization_id,
            name=item.name,
            uuid=item.uuid or uuid4(),
            archived=False,
            tools_secret=new_secret(),
        )
        for item in parsed
    ]
    # Explicit ids go in first and the sequence is moved past them, so the generated ids that
    # follow can never collide with them (PostgreSQL does not advance a sequence on its own).
    explicit = [(agent, item.id) for agent, item in zip(agents, parsed, strict=True) if item.id]
    for agent, agent_id in explicit:
        agent.id = agent_id
        context.session.add(agent)
    if explicit:
        await context.session.flush()
        await sync_id_sequence(context.session, "agents")
    context.session.add_all(a for a in agents if a.id is None)
    await context.session.flush()
    now = utcnow()
    for agent, (main, branches) in zip(agents, configs, strict=True):
        first = _commit(agent, MAIN, main, [], "Initial configuration", now)
        context.session.add_all([first, _branch(agent, MAIN, first.id, now)])
        for name, config in branches:
            made = _commit(agent, name, config, [str(first.id)], f"Branch {name}", now)
            context.session.add_all([made, _branch(agent, name, made.id, now)])
    await context.session.flush()
    return [a.id for a in agents]


def _commit(
    agent: Agent, branch: str, config: dict[str, Any], parents: list[str], message: str, now: Any
) -> AgentCommit:
    return AgentCommit(
        organization_id=agent.organization_id,
        id=uuid_module.uuid4(),
        agent_id=agent.id,
        parents=parents,
        branch=branch,
        author=FIXTURE_AUTHOR,
        message=message,
        config=config,
        created_at=now,
    )


def _branch(agent: Agent, name: str, head: UUID, now: Any) -> AgentBranch:
    return AgentBranch(
        organization_id=agent.organization_id,
        id=uuid_module.uuid4(),
        agent_id=agent.id,
        name=name,
        head=head,
        created_at=now,
        updated_at=now,
    )
