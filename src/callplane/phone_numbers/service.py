from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.agents.refs import MAIN
from callplane.errors import InvalidInput, NotFound
from callplane.kit.tenancy import same_organization, select_owned, update_owned
from callplane.models.agents import Agent
from callplane.models.base import utcnow
from callplane.models.phone_numbers import PhoneNumber
from callplane.phone_numbers.schemas import AgentRef
from callplane.phone_numbers.schemas import PhoneNumber as PhoneNumberOut

FRIENDLY_NAME_MAX = 255


def clean_friendly_name(value: object) -> str:
    """docs/api-contract.md#phone-numbers-voices-call-tags-feedback: a string of 1–255 characters
    after trimming."""
    if not isinstance(value, str):
        raise InvalidInput("friendly_name must be a string", loc=("body", "friendly_name"))
    trimmed = value.strip()
    if not 1 <= len(trimmed) <= FRIENDLY_NAME_MAX:
        raise InvalidInput(
            f"friendly_name must be 1 to {FRIENDLY_NAME_MAX} characters after trimming",
            loc=("body", "friendly_name"),
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in trimmed):
        raise InvalidInput(
            "friendly_name must not contain control characters", loc=("body", "friendly_name")
        )
    return trimmed


async def rename_number(
    session: AsyncSession, organization_id: int, number_id: uuid.UUID, friendly_name: str
) -> PhoneNumberOut:
    updated = (
        await session.execute(
            update_owned(PhoneNumber, organization_id)
            .where(PhoneNumber.id == number_id)
            .values(friendly_name=friendly_name, updated_at=utcnow())
            .returning(PhoneNumber.id)
        )
    ).first()
    if updated is None:
        raise NotFound("Phone number not found")
    row = (
        await session.execute(
            select_owned(PhoneNumber, organization_id, PhoneNumber, Agent)
            .outerjoin(
                Agent,
                (Agent.id == PhoneNumber.agent_id) & same_organization(Agent, PhoneNumber),
            )
            .where(PhoneNumber.id == number_id)
            .execution_options(populate_existing=True)
        )
    ).one()
    number, agent = row
    return number_out(number, agent)


async def list_numbers(session: AsyncSession, organization_id: int) -> list[PhoneNumberOut]:
    """The organization's numbers with their agents, in number order (the dashboard's list)."""
    rows = await session.execute(
        select(PhoneNumber, Agent)
        .outerjoin(
            Agent,
            (Agent.id == PhoneNumber.agent_id)
            & (Agent.organization_id == PhoneNumber.organization_id),
        )
        .where(PhoneNumber.organization_id == organization_id)
        .order_by(PhoneNumber.number, PhoneNumber.id)
    )
    return [number_out(number, agent) for number, agent in rows]


def number_out(number: PhoneNumber, agent: Agent | None) -> PhoneNumberOut:
    return PhoneNumberOut(
        id=number.id,
        number=number.number,
        friendly_name=number.friendly_name,
        area_code=number.area_code,
        country=number.country,
        created_at=number.created_at,
        updated_at=number.updated_at,
        agent=AgentRef(
            id=agent.id,
            name=agent.name,
            uuid=agent.uuid,
            branch=number.agent_branch_name or MAIN,
        )
        if agent
        else None,
    )
