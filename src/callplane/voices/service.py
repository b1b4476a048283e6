"""Voice queries and changes. Reads select straight into wire models: these are hot read paths."""

from __future__ import annotations

import uuid

from sqlalchemy import bindparam, exists
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.errors import Conflict, InvalidInput, NotFound
from callplane.kit.tenancy import delete_owned, owned_by, same_organization, select_owned
from callplane.models.agents import Agent, AgentBranch, AgentCommit
from callplane.models.calls import UNFINISHED_STATUSES, Call
from callplane.models.voices import Voice as VoiceRow
from callplane.runtime import Runtime
from callplane.settings import Settings
from callplane.speech.engines import EngineNotInstalled, check_engine
from callplane.voices.schemas import Voice, VoiceCreate

# Plain Core columns, so these skip the ORM execution path.
_voices = VoiceRow.__table__
_LIST = select_owned(_voices, bindparam("org")).order_by(_voices.c.name, _voices.c.id)
_ONE = select_owned(_voices, bindparam("org")).where(_voices.c.id == bindparam("id"))


async def list_voices(session: AsyncSession, organization_id: int) -> list[Voice]:
    rows = (await session.execute(_LIST, {"org": organization_id})).mappings()
    return [Voice.model_validate(row) for row in rows]


async def get_voice(session: AsyncSession, organization_id: int, voice_id: uuid.UUID) -> Voice:
    row = (await session.execute(_ONE, {"org": organization_id, "id": voice_id})).mappings().first()
    if row is None:
        raise NotFound("Voice not found")
    return Voice.model_validate(row)


async def create_voice(
    session: AsyncSession, organization_id: int, body: VoiceCreate, settings: Settings
) -> Voice:
    try:
        check_engine(body.engine, settings)
    except (ValueError, EngineNotInstalled) as exc:
        raise InvalidInput(str(exc), loc=("body", "engine")) from None
    row = VoiceRow(
        organization_id=organization_id,
        name=body.name,
        languages=body.languages,
        description=body.description,
        tags=body.tags,
        engine=body.engine,
    )
    session.add(row)
    await session.flush()
    return Voice.model_validate(row)


async def delete_voice(session: AsyncSession, organization_id: int, voice_id: uuid.UUID) -> None:
    """409 while a call that has not finished names it.

    The check and the delete are one statement, so a call queued in between cannot slip past.
    An agent's branch head naming the voice holds it too (docs/voices.md); the heads are read first
    (a commit's config is JSON, compared here rather than in two dialects' JSON paths), and a
    commit naming a deleted voice is refused by the agents API anyway.
    """
    if await _a_head_speaks_with(session, organization_id, voice_id):
        raise Conflict("Voice is used by an agent's branch head")
    in_use = exists().where(
        owned_by(Call, organization_id),
        Call.voice_uuid == voice_id,
        # A call not over yet may still speak with its voice: the voice must stay (docs/voices.md).
        Call.status.in_(UNFINISHED_STATUSES),
    )
    deleted = await session.execute(
        delete_owned(VoiceRow, organization_id)
        .where(VoiceRow.id == voice_id, ~in_use)
        .returning(VoiceRow.id)
    )
    if deleted.first() is not None:
        return
    found = select_owned(VoiceRow, organization_id, VoiceRow.id).where(VoiceRow.id == voice_id)
    if await session.scalar(found) is None:
        raise NotFound("Voice not found")
    raise Conflict("Voice is used by a call that has not finished")


async def _a_head_speaks_with(
    session: AsyncSession, organization_id: int, voice_id: uuid.UUID
) -> bool:
    heads = (
        select_owned(AgentBranch, organization_id, AgentCommit.config)
        .select_from(AgentBranch)
        .join(
            AgentCommit,
            same_organization(AgentCommit, AgentBranch) & (AgentCommit.id == AgentBranch.head),
        )
        .join(
            Agent,
            same_organization(Agent, AgentBranch) & (Agent.id == AgentBranch.agent_id),
        )
        .where(Agent.archived.is_(False))
    )
    wanted = str(voice_id)
    return any(config.get("voice_id") == wanted for config in await session.scalars(heads))


async def voice_engine(
    session: AsyncSession, organization_id: int, voice_id: uuid.UUID | None
) -> str | None:
    """The engine a call with this voice speaks with (``None``: the server's default)."""
    if voice_id is None:
        return None
    query = select_owned(VoiceRow, organization_id, VoiceRow.engine)
    engine: str | None = await session.scalar(query.where(VoiceRow.id == voice_id))
    return engine


async def call_voice_engine(
    runtime: Runtime, organization_id: int, voice_id: uuid.UUID | None
) -> str | None:
    """The engine of a call's voice, read once when the call is answered (the worker's own
    short read: a voice is not on the call row)."""
    if voice_id is None:
        return None
    async with runtime.db.session(write=False) as session:
        return await voice_engine(session, organization_id, voice_id)
