"""Fixture section: calls (docs/api-contract.md#the-fixture-document) — any subset of SPEC's Call
fields, any status and time.

``tags`` are call tag ids and ``agent_id`` an agent's uuid, both of the same organization.
Numbers are kept as written (a fixture records calls that happened); the searchable attributes
are indexed exactly as for a created call. An imported history can hold hundreds of thousands of
calls: they are written with ``BulkInsert`` (rows as tuples, no ORM objects), in chunks, and when
there are several chunks worker processes validate and encode the next ones while this process
writes (``callplane.kit.ahead``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, cast

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter
from sqlalchemy import Table, select
from sqlalchemy.exc import IntegrityError

from callplane.calls.attributes import attribute_entries
from callplane.calls.schemas import AnalysisResult, TranscriptEntry
from callplane.calls.service import KnownReferences
from callplane.errors import InvalidInput
from callplane.fixtures import (
    LoadContext,
    LoadError,
    conflict,
    parse_items,
    screened_items,
    section,
)
from callplane.kit.ahead import ahead
from callplane.kit.bulk import BulkInsert, random_uuid_hexes
from callplane.kit.schemas import Attributes, JSONObject, LongText, SafeStr, ShortText
from callplane.models.base import utcnow
from callplane.models.calls import Call, CallAttribute, CallStatus, CallTagLink
from callplane.models.orgs import Organization

Short64 = Annotated[SafeStr, StringConstraints(max_length=64)]


class CallItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: uuid.UUID | None = None
    simple_uuid: uuid.UUID | None = None
    from_number: Short64 | None = None
    to_number: Short64 | None = None
    status: CallStatus = "enqueued"
    started_at: datetime | None = None
    ended_at: datetime | None = None
    duration: int | None = Field(default=None, ge=0, le=10**9)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    transcripts: list[TranscriptEntry] = Field(default_factory=list)
    screen_pop_token: ShortText | None = None
    call_prompt: LongText | None = None
    answered_by: Annotated[SafeStr, StringConstraints(max_length=32)] | None = None
    language: Annotated[SafeStr, StringConstraints(max_length=32)] | None = None
    transferred: bool = False
    handoff_metadata: JSONObject | None = None
    direction: Annotated[SafeStr, StringConstraints(max_length=16)] | None = None
    tags: list[uuid.UUID] = Field(default_factory=list)
    voice_id: uuid.UUID | None = None
    agent_speaks_first: bool | None = None
    agent_id: uuid.UUID | None = None
    agent_branch: Short64 | None = None
    agent_commit_id: Short64 | None = None
    agent_branch_name: ShortText | None = None
    external_identifiers: Attributes = Field(default_factory=dict)
    params: Attributes = Field(default_factory=dict)
    cart: JSONObject | None = None
    analyzers: list[JSONObject] = Field(default_factory=list)
    analysis_results: list[AnalysisResult] = Field(default_factory=list)
    summary: LongText | None = None
    keyterms: list[ShortText] = Field(default_factory=list)
    first_message: LongText | None = None


#: Every column of ``calls``, in the order of the rows built below.
_CALL_COLUMNS = (
    "organization_id",
    "id",
    "simple_uuid",
    "from_number",
    "to_number",
    "status",
    "started_at",
    "ended_at",
    "duration",
    "transcripts",
    "screen_pop_token",
    "call_prompt",
    "answered_by",
    "language",
    "transferred",
    "handoff_metadata",
    "direction",
    "voice_uuid",
    "agent_speaks_first",
    "agent_uuid",
    "agent_branch",
    "agent_commit_id",
    "agent_branch_name",
    "campaign_id",
    "external_identifiers",
    "params",
    "cart",
    "analyzers",
    "analysis_results",
    "summary",
    "transcript_deleted_at",
    "redactions",
    "keyterms",
    "first_message",
    "simulate",
    "worker_id",
    "lease_expires_at",
    "event_sequence",
    "created_at",
    "updated_at",
)
# A column added to the model must be given its value here too (a bulk row has no defaults).
assert set(_CALL_COLUMNS) == set(Call.__table__.columns.keys()), "calls columns changed"
_LINK_COLUMNS = ("organization_id", "call_uuid", "tag_uuid", "position")
_ATTRIBUTE_COLUMNS = (
    "organization_id",
    "call_uuid",
    "source",
    "key_digest",
    "value_digest",
    "created_at",
)

#: Items validated, checked and written at a time: the memory of a few chunks is all the section
#: holds beyond the document (and the ids it returns).
CHUNK = 5000
#: A section of at least this many chunks is prepared (validated, turned into rows) by a worker
#: process while this one writes (``callplane.kit.ahead``); a smaller one is not worth the fork.
IN_WORKER_FROM = 2


#: What the section writes; calls first, the parent of the others.
_TABLES = tuple(cast(Table, model.__table__) for model in (Call, CallTagLink, CallAttribute))
_TRANSCRIPTS = TypeAdapter(list[TranscriptEntry])
_ANALYSIS_RESULTS = TypeAdapter(list[AnalysisResult])


def _stored(adapter: TypeAdapter[Any], models: list[Any]) -> Any:
    """A list of models as a JSON column holds it: the fields given (one call for the list)."""
    return adapter.dump_python(models, mode="json", exclude_unset=True) if models else models


@dataclass
class _Rows:
    """One chunk's rows, as tuples in ``_CALL_COLUMNS``' (and the others') order."""

    ids: list[str] = field(default_factory=list)
    calls: list[tuple[Any, ...]] = field(default_factory=list)
    links: list[tuple[Any, ...]] = field(default_factory=list)
    attributes: list[tuple[Any, ...]] = field(default_factory=list)


@dataclass
class _Chunk:
    """A chunk prepared: the ids of its calls, its rows as ``BulkInsert.batch`` made them ready
    for the writer (calls, links, attributes), and the references it names; or its first
    invalid item."""

    invalid: str | None = None
    ids: list[str] = field(default_factory=list)
    batches: tuple[Any, ...] = ()
    agents: set[uuid.UUID] = field(default_factory=set)
    voices: set[uuid.UUID] = field(default_factory=set)
    tags: set[uuid.UUID] = field(default_factory=set)


@section("calls", screens_items=True)
async def load_calls(context: LoadContext, items: list[Any]) -> list[Any]:
    """Chunk by chunk, with the precedence of a load that validated every item first and then
    stored them one by one: any invalid item is the error; otherwise the first unknown reference
    or conflicting id in document order. So after the first reference or conflict the remaining
    chunks are only validated."""
    org = context.organization_id
    async with (
        BulkInsert.of(context.session) as bulk,
        bulk.indexed_after(_TABLES, len(items)),
        bulk.foreign_keys_checked_by_caller(),
    ):
        # What the rows refer to: the organization and the tags, locked here and by
        # ``KnownReferences``; and the calls, inserted here before their links and attributes.
        await context.session.execute(
            select(Organization.id)
            .where(Organization.id == org)
            .with_for_update(read=True, key_share=True)
        )

        def prepare(start: int) -> _Chunk:
            return _prepare(bulk, org, items[start : start + CHUNK], start)

        def release(start: int) -> None:
            # Only ever in the worker, whose copy of the list this is.
            end = min(start + CHUNK, len(items))
            items[start:end] = [None] * (end - start)

        starts = range(0, len(items), CHUNK)
        known = KnownReferences()
        created: list[Any] = []
        failure: LoadError | None = None
        in_worker = len(starts) >= IN_WORKER_FROM
        async with ahead(prepare, starts, in_worker=in_worker, release=release) as chunks:
            async for start, chunk in chunks:
                if chunk.invalid is not None:
                    raise LoadError(chunk.invalid)
                if failure is not None:
                    continue
                unknown = await _unknown_reference(context, known, chunk, items, start)
                if unknown is not None:
                    # Rare, and the load fails: the items before it are written (a conflict
                    # among them comes first), prepared again here.
                    chunk = _prepare(bulk, org, items[start : unknown[0]], start)
                created += chunk.ids
                failure = await _write(bulk, chunk) or (unknown and unknown[1])
        if failure is not None:
            raise failure
        return created


def _prepare(encoding: BulkInsert, org: int, items: list[Any], start: int) -> _Chunk:
    """Validate a chunk and build its rows; pure (it may run in a worker process)."""
    try:
        valid = parse_items("calls", screened_items("calls", items, start), CallItem, start)
    except LoadError as exc:
        return _Chunk(invalid=exc.message)
    rows = _rows(org, encoding, valid)
    chunk = _Chunk(
        ids=rows.ids,
        batches=(
            encoding.batch(_CALL_COLUMNS, rows.calls),
            encoding.batch(_LINK_COLUMNS, rows.links),
            encoding.batch(_ATTRIBUTE_COLUMNS, rows.attributes),
        ),
    )
    for item in valid:
        if item.agent_id is not None:
            chunk.agents.add(item.agent_id)
        if item.voice_id is not None:
            chunk.voices.add(item.voice_id)
        chunk.tags.update(item.tags)
    return chunk


async def _unknown_reference(
    context: LoadContext, known: KnownReferences, chunk: _Chunk, items: list[Any], start: int
) -> tuple[int, LoadError] | None:
    """The index and error of the chunk's first item naming an unknown agent, voice or tag."""
    await known.look_up(
        context.session,
        context.organization_id,
        agents=chunk.agents,
        voices=chunk.voices,
        tags=chunk.tags,
    )
    named = ((known.agents, chunk.agents), (known.voices, chunk.voices), (known.tags, chunk.tags))
    if all(found[u] for found, wanted in named for u in wanted):
        return None
    # Rare: which item it is. The chunk's items (valid, checked above) are read again for it.
    valid = parse_items("calls", items[start : start + len(chunk.ids)], CallItem, start)
    for index, item in enumerate(valid, start):
        try:
            known.check(item.agent_id, item.voice_id, item.tags)
        except InvalidInput as exc:
            return index, LoadError(f"calls[{index}].{exc.loc[-1]}: {exc.message}")
    raise AssertionError("an unknown reference that no item names")


async def _write(bulk: BulkInsert, chunk: _Chunk) -> LoadError | None:
    try:
        for table, batch in zip(_TABLES, chunk.batches, strict=True):
            await bulk.insert(table.name, batch)
    except IntegrityError as exc:
        return conflict("calls", exc)
    return None


def _rows(org: int, encoding: BulkInsert, chunk: list[CallItem]) -> _Rows:
    rows = _Rows()
    uuid_, timestamp, json, flag = encoding.uuid, encoding.timestamp, encoding.json, encoding.flag
    calls, links, attributes = rows.calls, rows.links, rows.attributes
    missing = sum((item.id is None) + (item.simple_uuid is None) for item in chunk)
    generated = iter(random_uuid_hexes(missing))
    for item in chunk:
        if item.id is None:
            stored_id = next(generated)
            call_id = str(uuid.UUID(hex=stored_id))
        else:
            stored_id, call_id = item.id.hex, str(item.id)
        created_at = item.created_at or utcnow()
        stored_created_at = timestamp(created_at)
        calls.append(
            (
                org,
                stored_id,
                next(generated) if item.simple_uuid is None else uuid_(item.simple_uuid),
                item.from_number,
                item.to_number,
                item.status,
                timestamp(item.started_at),
                timestamp(item.ended_at),
                item.duration,
                json(_stored(_TRANSCRIPTS, item.transcripts)),
                item.screen_pop_token,
                item.call_prompt,
                item.answered_by,
                item.language,
                flag(item.transferred),
                json(item.handoff_metadata),
                item.direction,
                uuid_(item.voice_id),
                flag(item.agent_speaks_first),
                uuid_(item.agent_id),
                item.agent_branch,
                item.agent_commit_id,
                item.agent_branch_name,
                None,  # a fixture's call is no campaign's attempt
                json(item.external_identifiers),
                json(item.params),
                json(item.cart),
                json(item.analyzers),
                json(_stored(_ANALYSIS_RESULTS, item.analysis_results)),
                item.summary,
                None,  # retention has not deleted its transcript
                None,  # no agent's redaction ran on it
                json(item.keyterms),
                item.first_message,
                None,  # a loaded call is history: it is never dialled
                None,
                None,
                0,
                stored_created_at,
                timestamp(item.updated_at) if item.updated_at else stored_created_at,
            )
        )
        links.extend(
            (org, stored_id, uuid_(tag), position)
            for position, tag in enumerate(dict.fromkeys(item.tags))
        )
        attributes.extend(
            (org, stored_id, source, key_digest, value_digest, stored_created_at)
            for source, key_digest, value_digest in attribute_entries(
                item.params, item.external_identifiers
            )
        )
        rows.ids.append(call_id)
    return rows
