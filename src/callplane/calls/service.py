"""Calls: create, read, list and cancel (SPEC; docs/api-contract.md). Services flush, never
commit."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import or_
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.agents.contacts import contact_data
from callplane.agents.service import ResolvedAgent, resolve_for_call
from callplane.calls.attributes import attribute_rows, index_attributes
from callplane.calls.schemas import CallCreate
from callplane.errors import Conflict, InvalidInput, NotFound
from callplane.kit.pagination import count, offset
from callplane.kit.tenancy import same_organization, select_owned, update_owned
from callplane.models.agents import Agent
from callplane.models.base import utcnow
from callplane.models.call_tags import CallTag
from callplane.models.calls import Call, CallTagLink
from callplane.models.voices import Voice
from callplane.observability.metrics import count_cancelled
from callplane.recordings.urls import call_recording_urls
from callplane.runtime import Runtime

CALL_NOT_FOUND = "Call not found"

#: Columns copied to the wire under the same name (the rest are renamed or computed).
_SAME_NAME = (
    "id",
    "simple_uuid",
    "from_number",
    "to_number",
    "status",
    "started_at",
    "ended_at",
    "duration",
    "created_at",
    "updated_at",
    "transcripts",
    "screen_pop_token",
    "call_prompt",
    "answered_by",
    "language",
    "transferred",
    "handoff_metadata",
    "direction",
)
_AFTER_TAGS = ("agent_speaks_first",)
_AGENT = ("agent_branch", "agent_commit_id", "agent_branch_name", "external_identifiers", "params")
_TAIL = ("cart", "analyzers", "analysis_results", "summary", "keyterms", "first_message")


def uuid_text(value: uuid.UUID | None) -> str | None:
    """asyncpg returns its own UUID subclass, which orjson cannot serialize: send text."""
    return None if value is None else str(value)


def call_wire(call: Call, tags: list[dict[str, Any]], recording_url: str | None) -> dict[str, Any]:
    """The Call resource in SPEC's field order."""
    wire: dict[str, Any] = {name: getattr(call, name) for name in _SAME_NAME}
    wire["id"] = uuid_text(call.id)
    wire["simple_uuid"] = uuid_text(call.simple_uuid)
    wire["tags"] = tags
    wire["voice_id"] = uuid_text(call.voice_uuid)
    wire["agent_speaks_first"] = call.agent_speaks_first
    wire["agent_id"] = uuid_text(call.agent_uuid)
    for name in _AGENT:
        wire[name] = getattr(call, name)
    wire["recording_presigned_url"] = recording_url
    for name in _TAIL:
        wire[name] = getattr(call, name)
    wire["campaign_id"] = uuid_text(call.campaign_id)
    wire["transcript_deleted_at"] = call.transcript_deleted_at
    return wire


async def tags_of(
    session: AsyncSession, organization_id: int, call_uuids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, list[dict[str, Any]]]:
    """Tag summaries of many calls in one query, each call's in the order they were given."""
    found: dict[uuid.UUID, list[dict[str, Any]]] = {u: [] for u in call_uuids}
    if not call_uuids:
        return found
    rows = await session.execute(
        select_owned(
            CallTagLink,
            organization_id,
            CallTagLink.call_uuid,
            CallTag.id,
            CallTag.name,
            CallTag.description,
            CallTag.color,
        )
        .join(
            CallTag, same_organization(CallTag, CallTagLink) & (CallTag.id == CallTagLink.tag_uuid)
        )
        .where(CallTagLink.call_uuid.in_(list(call_uuids)))
        .order_by(CallTagLink.call_uuid, CallTagLink.position)
    )
    for call_uuid, tag_id, name, description, color in rows:
        found[call_uuid].append(
            {"id": uuid_text(tag_id), "name": name, "description": description, "color": color}
        )
    return found


async def calls_wire(
    session: AsyncSession, runtime: Runtime, organization_id: int, calls: Sequence[Call]
) -> list[dict[str, Any]]:
    """Wire form of many calls: one query for their tags, one call for their recording URLs."""
    ids = [c.id for c in calls]
    tags = await tags_of(session, organization_id, ids)
    urls = await call_recording_urls(session, runtime, organization_id, ids) if ids else {}
    return [call_wire(c, tags[c.id], urls.get(c.id)) for c in calls]


async def check_references(
    session: AsyncSession,
    organization_id: int,
    *,
    agent_uuid: uuid.UUID | None,
    voice_uuid: uuid.UUID | None,
    tag_uuids: Sequence[uuid.UUID],
) -> None:
    """InvalidInput for the first reference that names nothing of the organization."""
    if agent_uuid is not None:
        agent = await session.scalar(
            select_owned(Agent, organization_id, Agent.id).where(Agent.uuid == agent_uuid)
        )
        if agent is None:
            raise InvalidInput("no such agent", loc=("body", "agent_id"))
    if voice_uuid is not None:
        voice = await session.scalar(
            select_owned(Voice, organization_id, Voice.id).where(Voice.id == voice_uuid)
        )
        if voice is None:
            raise InvalidInput("no such voice", loc=("body", "voice_id"))
    if tag_uuids:
        known = set(
            await session.scalars(
                select_owned(CallTag, organization_id, CallTag.id).where(
                    CallTag.id.in_(list(tag_uuids))
                )
            )
        )
        missing = [t for t in tag_uuids if t not in known]
        if missing:
            raise InvalidInput(f"no such call tag {missing[0]}", loc=("body", "tags"))


#: The most values one ``IN (...)`` of a lookup carries.
_LOOKUP_BATCH = 500


@dataclass
class KnownReferences:
    """Which agent, voice and call tag uuids name something of the organization, remembered
    across lookups: ``check_references`` for many calls at once (a fixture of many calls asks
    about the same few again and again), with the same errors."""

    agents: dict[uuid.UUID, bool] = field(default_factory=dict)
    voices: dict[uuid.UUID, bool] = field(default_factory=dict)
    tags: dict[uuid.UUID, bool] = field(default_factory=dict)

    async def look_up(
        self,
        session: AsyncSession,
        organization_id: int,
        *,
        agents: Iterable[uuid.UUID],
        voices: Iterable[uuid.UUID],
        tags: Iterable[uuid.UUID],
    ) -> None:
        # Tags are locked as the foreign key of each link would lock them (KEY SHARE: no delete
        # until this transaction ends), once per tag: a bulk insert may write the links without
        # the per-row triggers (``BulkInsert.foreign_keys_checked_by_caller``).
        for known, wanted, column, locked in (
            (self.agents, agents, Agent.uuid, False),
            (self.voices, voices, Voice.id, False),
            (self.tags, tags, CallTag.id, True),
        ):
            new = list(dict.fromkeys(u for u in wanted if u not in known))
            for start in range(0, len(new), _LOOKUP_BATCH):
                batch = new[start : start + _LOOKUP_BATCH]
                query = select_owned(column.class_, organization_id, column).where(
                    column.in_(batch)
                )
                if locked:
                    query = query.with_for_update(read=True, key_share=True)
                found = set(await session.scalars(query))
                known.update((u, u in found) for u in batch)

    def check(
        self,
        agent_uuid: uuid.UUID | None,
        voice_uuid: uuid.UUID | None,
        tag_uuids: Sequence[uuid.UUID],
    ) -> None:
        """InvalidInput for the first of these references that names nothing (all looked up)."""
        if agent_uuid is not None and not self.agents[agent_uuid]:
            raise InvalidInput("no such agent", loc=("body", "agent_id"))
        if voice_uuid is not None and not self.voices[voice_uuid]:
            raise InvalidInput("no such voice", loc=("body", "voice_id"))
        missing = [t for t in tag_uuids if not self.tags[t]]
        if missing:
            raise InvalidInput(f"no such call tag {missing[0]}", loc=("body", "tags"))


async def add_call(session: AsyncSession, call: Call, tag_uuids: Sequence[uuid.UUID]) -> None:
    """Insert a call with its tag links and its searchable attributes (one transaction)."""
    session.add(call)
    await session.flush()
    if tag_uuids:
        session.add_all(
            CallTagLink(
                organization_id=call.organization_id,
                call_uuid=call.id,
                tag_uuid=tag,
                position=position,
            )
            for position, tag in enumerate(dict.fromkeys(tag_uuids))
        )
    await index_attributes(
        session,
        attribute_rows(
            call.organization_id,
            call.id,
            call.created_at,
            call.params,
            call.external_identifiers,
        ),
    )
    await session.flush()


async def resolve_agent(
    session: AsyncSession, organization_id: int, body: CallCreate
) -> ResolvedAgent | None:
    """The commit the call runs, resolved now (docs/agents.md): a branch head that moves later does
    not change a queued call. ``required_variables`` must be in params or the callee's contact
    data, else 422 naming them."""
    if body.agent_id is None:
        if body.agent_branch_name is not None or body.agent_commit_id is not None:
            raise InvalidInput(
                "agent_id: is required with an agent branch or commit", loc=("body",)
            )
        return None
    resolved = await resolve_for_call(
        session,
        organization_id,
        agent_uuid=body.agent_id,
        branch_name=body.agent_branch_name,
        commit_id=body.agent_commit_id,
        other_party=body.to_number,
    )
    required = [n for n in resolved.config.get("required_variables", []) if n not in body.params]
    if required:
        contact = await contact_data(session, organization_id, body.to_number)
        missing = [n for n in required if n not in contact]
        if missing:
            raise InvalidInput(
                f"params: missing required variables: {', '.join(missing)}", loc=("body",)
            )
    return resolved


async def create_call(
    session: AsyncSession,
    organization_id: int,
    body: CallCreate,
    *,
    campaign_id: uuid.UUID | None = None,
) -> Call:
    """A new enqueued call; ``campaign_id`` makes it an attempt of that campaign."""
    call = await prepare_call(session, organization_id, body, campaign_id=campaign_id)
    await add_call(session, call, body.tags)
    return call


async def add_calls(session: AsyncSession, calls: Sequence[Call]) -> None:
    """Insert many prepared calls without tags (a campaign's attempts): one flush, one insert
    of their searchable attributes."""
    session.add_all(calls)
    await session.flush()
    await index_attributes(
        session,
        [
            row
            for call in calls
            for row in attribute_rows(
                call.organization_id,
                call.id,
                call.created_at,
                call.params,
                call.external_identifiers,
            )
        ],
    )


async def prepare_call(
    session: AsyncSession,
    organization_id: int,
    body: CallCreate,
    *,
    campaign_id: uuid.UUID | None = None,
) -> Call:
    """The call ``POST /calls`` would create, checked (its agent resolved now, its references
    known) but not yet added to the session."""
    agent = await resolve_agent(session, organization_id, body)
    await check_references(
        session,
        organization_id,
        agent_uuid=None,
        voice_uuid=body.voice_id,
        tag_uuids=body.tags,
    )
    now = utcnow()
    call = Call(
        organization_id=organization_id,
        id=uuid.uuid4(),
        simple_uuid=uuid.uuid4(),
        to_number=body.to_number,
        from_number=body.from_number,
        status="enqueued",
        direction="outbound",
        agent_uuid=body.agent_id,
        agent_branch=uuid_text(agent.branch_uuid) if agent else None,
        agent_branch_name=agent.branch_name if agent else None,
        agent_commit_id=str(agent.commit_id) if agent else None,
        campaign_id=campaign_id,
        voice_uuid=body.voice_id,
        call_prompt=body.call_prompt,
        language=body.language,
        agent_speaks_first=body.agent_speaks_first,
        first_message=body.first_message,
        simulate=body.simulate.model_dump() if body.simulate else None,
        params=body.params,
        external_identifiers=body.external_identifiers,
        keyterms=body.keyterms,
        analyzers=[
            {**a.model_dump(mode="json"), "id": str(a.id or uuid.uuid4())} for a in body.analyzers
        ],
        transcripts=[],
        analysis_results=[],
        transferred=False,
        created_at=now,
        updated_at=now,
    )
    return call


async def get_call(session: AsyncSession, organization_id: int, call_uuid: uuid.UUID) -> Call:
    query = select_owned(Call, organization_id).where(Call.id == call_uuid)
    call: Call | None = await session.scalar(query)
    if call is None:
        raise NotFound(CALL_NOT_FOUND)
    return call


async def list_calls(
    session: AsyncSession,
    organization_id: int,
    *,
    page: int,
    page_size: int,
    status: str | None,
    direction: str | None,
    created_after: datetime | None,
    created_before: datetime | None,
    agent_uuid: uuid.UUID | None = None,
    number: str | None = None,
) -> tuple[Sequence[Call], int]:
    """``agent_uuid`` and ``number`` (either party, E.164) narrow the dashboard's list."""
    query = select_owned(Call, organization_id)
    if status is not None:
        query = query.where(Call.status == status)
    if agent_uuid is not None:
        query = query.where(Call.agent_uuid == agent_uuid)
    if number is not None:
        query = query.where(or_(Call.to_number == number, Call.from_number == number))
    if direction is not None:
        query = query.where(Call.direction == direction)
    if created_after is not None:
        query = query.where(Call.created_at > created_after)
    if created_before is not None:
        query = query.where(Call.created_at < created_before)
    total = await count(session, query)
    rows = await session.scalars(
        query.order_by(Call.created_at.desc(), Call.id.desc())
        .limit(page_size)
        .offset(offset(page, page_size))
    )
    return rows.all(), total


async def cancel_call(
    session: AsyncSession, organization_id: int, call_uuid: uuid.UUID
) -> Call | None:
    """enqueued → cancelled (returns the cancelled call); cancelled stays cancelled (returns None);
    any other status is a conflict.

    The check and the change are one conditional UPDATE
    (docs/api-contract.md#call-statuses-and-cancel): a dispatcher that takes the call at the same
    moment either sees it cancelled or makes this UPDATE match nothing. Only when it matched nothing
    is the status read, to tell "already cancelled" (success), "started or finished" (409) and "no
    such call" (404) apart.
    """
    cancelled: Call | None = await session.scalar(
        update_owned(Call, organization_id)
        .where(Call.id == call_uuid, Call.status == "enqueued")
        .values(
            status="cancelled",
            updated_at=utcnow(),
            event_sequence=Call.event_sequence + 1,
        )
        .returning(Call)
        .execution_options(synchronize_session=False)
    )
    count_cancelled(cancelled)  # issue 29
    if cancelled is not None:
        return cancelled
    status = await session.scalar(
        select_owned(Call, organization_id, Call.status).where(Call.id == call_uuid)
    )
    if status is None:
        raise NotFound(CALL_NOT_FOUND)
    if status != "cancelled":
        raise Conflict(f"Call cannot be cancelled: its status is {status}")
    return None
