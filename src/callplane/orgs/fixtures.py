"""Fixture section: agents."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

from pydantic import BaseModel, ConfigDict, Field

from callplane.db import sync_id_sequence
from callplane.loader import LoadContext, parse_items, section
from callplane.models.agents import Agent


class AgentItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: int | None = Field(default=None, ge=1, le=2**31 - 1)
    uuid: UUID | None = None
    name: str = Field(min_length=1, max_length=255)


@section("agents")
async def load_agents(context: LoadContext, items: list[Any]) -> list[Any]:
    agents = []
    for item in parse_items("agents", items, AgentItem):
        agent = Agent(
            organization_id=context.organization_id,
            name=item.name,
            uuid=item.uuid or uuid4(),
        )
        if item.id is not None:
            agent.id = item.id
        context.session.add(agent)
        agents.append(agent)
    await context.session.flush()
    if any(item.get("id") is not None for item in items if isinstance(item, dict)):
        await sync_id_sequence(context.session, "agents")
    return [a.id for a in agents]
