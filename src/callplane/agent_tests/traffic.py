"""``/agents/{uuid}/traffic``: split the calls that name no branch over 2–5 branches by weight
(``agents/traffic.py`` picks one per caller). Services flush, never commit."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.agents.service import find_branch, get_agent
from callplane.errors import InvalidInput
from callplane.kit.schemas import SafeStr
from callplane.models.base import utcnow


class Split(BaseModel):
    model_config = ConfigDict(extra="forbid")

    branch: Annotated[SafeStr, StringConstraints(min_length=1, max_length=64)]
    weight: Annotated[int, Field(ge=1, le=100)]


class TrafficBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    splits: Annotated[list[Split], Field(min_length=2, max_length=5)]

    @model_validator(mode="after")
    def _whole(self) -> TrafficBody:
        total = sum(s.weight for s in self.splits)
        if total != 100:
            raise ValueError(f"splits: the weights sum to {total}, not 100")
        names = [s.branch for s in self.splits]
        if len(set(names)) != len(names):
            raise ValueError("splits: each branch may appear once")
        return self


class Traffic(BaseModel):
    splits: list[Split]


class TrafficEnvelope(BaseModel):
    traffic: Traffic


async def get_traffic(
    session: AsyncSession, organization_id: int, agent_uuid: uuid.UUID
) -> list[dict[str, Any]]:
    agent = await get_agent(session, organization_id, agent_uuid)
    return list(agent.traffic or [])


async def set_traffic(
    session: AsyncSession,
    organization_id: int,
    agent_uuid: uuid.UUID,
    splits: list[dict[str, Any]] | None,
) -> list[dict[str, Any]]:
    agent = await get_agent(session, organization_id, agent_uuid)
    for index, split in enumerate(splits or []):
        if await find_branch(session, organization_id, agent.id, split["branch"]) is None:
            raise InvalidInput(
                f"splits.{index}.branch: no branch {split['branch']} in this agent",
                loc=("body",),
            )
    agent.traffic = splits
    agent.updated_at = utcnow()
    await session.flush()
    return list(splits or [])
