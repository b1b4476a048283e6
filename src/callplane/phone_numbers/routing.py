"""Numbers owned and routed through the API (docs/agents.md): create, list, delete, and routing to
an agent's branch. A number is unique across organizations: the check and the insert run under a
per-number lock, so organizations racing for it get one 201 and 409s, never a 500."""

from __future__ import annotations

import uuid
from typing import Any

import phonenumbers
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.agents.refs import MAIN
from callplane.errors import Conflict, InvalidInput, NotFound
from callplane.kit.e164 import NotAPhoneNumber, phone_number
from callplane.kit.tenancy import (
    across_organizations,
    delete_owned,
    same_organization,
    select_owned,
    update_owned,
)
from callplane.models.agents import Agent, AgentBranch
from callplane.models.base import utcnow
from callplane.models.phone_numbers import PhoneNumber
from callplane.phone_numbers.schemas import PhoneNumber as PhoneNumberOut
from callplane.phone_numbers.service import clean_friendly_name, number_out

NOT_FOUND = "Phone number not found"


def _text(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{key} must be a string", loc=("body", key))
    return value


async def _route(
    session: AsyncSession, organization_id: int, agent_uuid: object, branch: object
) -> tuple[int, str]:
    """The agent id and branch name a number may route to, else 422 naming the field."""
    try:
        wanted = uuid.UUID(str(agent_uuid))
    except ValueError:
        raise InvalidInput("agent_id must be a uuid", loc=("body", "agent_id")) from None
    if branch is not None and not isinstance(branch, str):
        raise InvalidInput("agent_branch_name must be a string", loc=("body", "agent_branch_name"))
    name = branch or MAIN
    agent_id = await session.scalar(
        select_owned(Agent, organization_id, Agent.id).where(
            Agent.uuid == wanted, Agent.archived.is_(False)
        )
    )
    if agent_id is None:
        raise InvalidInput("agent_id: no such agent", loc=("body", "agent_id"))
    found = await session.scalar(
        select_owned(AgentBranch, organization_id, AgentBranch.id).where(
            AgentBranch.agent_id == agent_id, AgentBranch.name == name
        )
    )
    if found is None:
        raise InvalidInput(
            "agent_branch_name: no such branch of this agent", loc=("body", "agent_branch_name")
        )
    return agent_id, name


async def _one(session: AsyncSession, organization_id: int, number_id: uuid.UUID) -> PhoneNumberOut:
    row = (
        await session.execute(
            select_owned(PhoneNumber, organization_id, PhoneNumber, Agent)
            .outerjoin(
                Agent,
                (Agent.id == PhoneNumber.agent_id)
                & (Agent.organization_id == PhoneNumber.organization_id),
            )
            .where(PhoneNumber.id == number_id)
            .execution_options(populate_existing=True)
        )
    ).first()
    if row is None:
        raise NotFound(NOT_FOUND)
    return number_out(row[0], row[1])


def _place(number: str) -> tuple[str | None, str | None]:
    """Area code and country of an E.164 number (area codes for NANP numbers only)."""
    parsed = phonenumbers.parse(number, None)
    country = phonenumbers.region_code_for_number(parsed)
    area = str(parsed.national_number)[:3] if parsed.country_code == 1 else None
    return area, country


async def _claim(session: AsyncSession, number: str) -> None:
    """409 when the number exists in any organization. Writers of one number are serialized
    first (PostgreSQL: a transaction-scoped advisory lock on the number; SQLite: every write
    transaction already holds the database's write lock), so the check and the insert that
    follows are atomic."""
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(select(func.pg_advisory_xact_lock(func.hashtext(number))))
    taken = await session.scalar(
        across_organizations(
            select(PhoneNumber.id).where(PhoneNumber.number == number).limit(1),
            "a phone number is unique across organizations",
        )
    )
    if taken is not None:
        raise Conflict("Phone number already exists")


async def create_number(
    session: AsyncSession, organization_id: int, body: dict[str, Any]
) -> PhoneNumberOut:
    raw = _text(body, "number")
    if not raw:
        raise InvalidInput("number is required (E.164)", loc=("body", "number"))
    try:
        number = phone_number(raw)
    except NotAPhoneNumber as exc:
        raise InvalidInput(f"number {exc}", loc=("body", "number")) from None
    friendly = body.get("friendly_name")
    friendly_name = clean_friendly_name(friendly) if friendly is not None else None
    agent_id, branch = None, None
    if body.get("agent_id") is not None:
        agent_id, branch = await _route(
            session, organization_id, body["agent_id"], body.get("agent_branch_name")
        )
    area, country = _place(number)
    now = utcnow()
    number_id = uuid.uuid4()
    await _claim(session, number)
    session.add(
        PhoneNumber(
            organization_id=organization_id,
            id=number_id,
            number=number,
            friendly_name=friendly_name,
            area_code=area,
            country=country,
            agent_id=agent_id,
            agent_branch_name=branch,
            created_at=now,
            updated_at=now,
        )
    )
    await session.flush()
    return await _one(session, organization_id, number_id)


async def update_number(
    session: AsyncSession, organization_id: int, number_id: uuid.UUID, body: dict[str, Any]
) -> PhoneNumberOut:
    """PATCH: ``friendly_name``, and routing (``agent_id`` uuid or null, ``agent_branch_name``
    [main]). A body with none of them is a 422 about friendly_name (SPEC's one field)."""
    values: dict[str, Any] = {}
    routing = "agent_id" in body or "agent_branch_name" in body
    if "friendly_name" in body or not routing:
        values["friendly_name"] = clean_friendly_name(body.get("friendly_name"))
    if routing:
        agent_uuid = body.get("agent_id")
        if "agent_id" not in body:
            current = await session.scalar(
                select_owned(PhoneNumber, organization_id, Agent.uuid)
                .select_from(PhoneNumber)
                .join(
                    Agent,
                    (Agent.id == PhoneNumber.agent_id) & same_organization(Agent, PhoneNumber),
                )
                .where(PhoneNumber.id == number_id)
            )
            if current is None:
                await _one(session, organization_id, number_id)  # 404 when there is no number
                raise InvalidInput(
                    "agent_branch_name: the number routes to no agent",
                    loc=("body", "agent_branch_name"),
                )
            agent_uuid = current
        if agent_uuid is None:
            values.update(agent_id=None, agent_branch_name=None)
        else:
            agent_id, branch = await _route(
                session, organization_id, agent_uuid, body.get("agent_branch_name")
            )
            values.update(agent_id=agent_id, agent_branch_name=branch)
    updated = await session.scalar(
        update_owned(PhoneNumber, organization_id)
        .where(PhoneNumber.id == number_id)
        .values(**values, updated_at=utcnow())
        .returning(PhoneNumber.id)
    )
    if updated is None:
        raise NotFound(NOT_FOUND)
    return await _one(session, organization_id, number_id)


async def delete_number(session: AsyncSession, organization_id: int, number_id: uuid.UUID) -> None:
    deleted = await session.scalar(
        delete_owned(PhoneNumber, organization_id)
        .where(PhoneNumber.id == number_id)
        .returning(PhoneNumber.id)
    )
    if deleted is None:
        raise NotFound(NOT_FOUND)
