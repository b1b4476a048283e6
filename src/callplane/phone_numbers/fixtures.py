"""Fixture section: phone numbers (``agent_id`` names an agent of the same organization).

``agent_id`` is the agent's integer id or its uuid: a document that names agents by uuid only
loads into any organization, since agent ids are unique across the deployment.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select

from callplane.agents.refs import MAIN
from callplane.fixtures import LoadContext, LoadError, parse_items, section
from callplane.kit.tenancy import select_owned
from callplane.models.agents import Agent, AgentBranch
from callplane.models.base import utcnow
from callplane.models.phone_numbers import PhoneNumber


class PhoneNumberItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: uuid.UUID | None = None
    number: str = Field(min_length=1, max_length=32)
    friendly_name: str | None = Field(default=None, max_length=255)
    area_code: str | None = Field(default=None, max_length=16)
    country: str | None = Field(default=None, max_length=8)
    agent_id: int | uuid.UUID | None = None
    agent_branch_name: str | None = Field(default=None, min_length=1, max_length=63)
    created_at: datetime | None = None


@section("phone_numbers")
async def load_phone_numbers(context: LoadContext, items: list[Any]) -> list[Any]:
    parsed = parse_items("phone_numbers", items, PhoneNumberItem)
    wanted = {p.agent_id for p in parsed if p.agent_id is not None}
    rows = await context.session.execute(
        select(Agent.id, Agent.uuid).where(
            Agent.organization_id == context.organization_id,
            Agent.id.in_([w for w in wanted if isinstance(w, int)])
            | Agent.uuid.in_([w for w in wanted if isinstance(w, uuid.UUID)]),
        )
    )
    known: dict[int | uuid.UUID, int] = {}
    for agent_id, agent_uuid in rows:
        known[agent_id] = known[agent_uuid] = agent_id
    branches = set(
        (
            await context.session.execute(
                select_owned(
                    AgentBranch, context.organization_id, AgentBranch.agent_id, AgentBranch.name
                ).where(AgentBranch.agent_id.in_(set(known.values())))
            )
        ).tuples()
    )
    numbers = []
    for index, item in enumerate(parsed):
        if item.agent_id is not None and item.agent_id not in known:
            raise LoadError(f"phone_numbers[{index}].agent_id: no agent {item.agent_id}")
        branch = item.agent_branch_name or MAIN if item.agent_id is not None else None
        if item.agent_id is None and item.agent_branch_name is not None:
            raise LoadError(f"phone_numbers[{index}].agent_branch_name: needs an agent_id")
        if item.agent_id is not None and (known[item.agent_id], branch) not in branches:
            raise LoadError(f"phone_numbers[{index}].agent_branch_name: no branch {branch}")
        numbers.append(
            PhoneNumber(
                organization_id=context.organization_id,
                id=item.id or uuid.uuid4(),
                number=item.number,
                friendly_name=item.friendly_name,
                area_code=item.area_code,
                country=item.country,
                agent_id=None if item.agent_id is None else known[item.agent_id],
                agent_branch_name=branch,
                created_at=item.created_at or utcnow(),
                updated_at=item.created_at or utcnow(),
            )
        )
    context.session.add_all(numbers)
    return [str(n.id) for n in numbers]
