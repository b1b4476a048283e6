"""Fixture section: agents."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

from pydantic import BaseModel, ConfigDict, Field

from callplane.fixtures import LoadContext, parse_items, section
from callplane.kit.db import sync_id_sequence
from callplane.models.agents import Agent


class AgentItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: int | None = Field(default=None, ge=1, le=2**31 - 1)
    uuid: UUID | None = None
    name: str = Field(min_length=1, max_length=255)


@section("agents")
async def load_agents(context: LoadContext, items: list[Any]) -> list[Any]:
    parsed = parse_items("agents", items, AgentItem)
    agents = [
        Agent(organization_id=context.organization_id, name=item.name, uuid=item.uuid or uuid4())
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
    return [a.id for a in agents]
