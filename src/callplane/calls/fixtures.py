"""Fixture section: calls (DESIGN §8) — any subset of SPEC's Call fields, any status and time.

``tags`` are call tag ids and ``agent_id`` an agent's uuid, both of the same organization.
Numbers are kept as written (a fixture records calls that happened); the searchable attributes
are indexed exactly as for a created call.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from callplane.calls.schemas import (
    AnalysisResult,
    Attributes,
    JSONObject,
    LongText,
    SafeStr,
    ShortText,
    TranscriptEntry,
)
from callplane.calls.service import add_call, check_references
from callplane.errors import InvalidInput
from callplane.loader import LoadContext, LoadError, parse_items, section
from callplane.models.base import utcnow
from callplane.models.calls import Call

Short64 = Annotated[SafeStr, StringConstraints(max_length=64)]


class CallItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: uuid.UUID | None = None
    simple_uuid: uuid.UUID | None = None
    from_number: Short64 | None = None
    to_number: Short64 | None = None
    status: Literal[
        "enqueued",
        "dialing",
        "in_progress",
        "completed",
        "failed",
        "no_answer",
        "busy",
        "cancelled",
    ] = "enqueued"
    started_at: datetime | None = None
    ended_at: datetime | None = None
    duration: int | None = Field(default=None, ge=0, le=10**9)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    transcripts: list[TranscriptEntry] = []
    screen_pop_token: ShortText | None = None
    call_prompt: LongText | None = None
    answered_by: Annotated[SafeStr, StringConstraints(max_length=32)] | None = None
    language: Annotated[SafeStr, StringConstraints(max_length=32)] | None = None
    transferred: bool = False
    handoff_metadata: JSONObject | None = None
    direction: Annotated[SafeStr, StringConstraints(max_length=16)] | None = None
    tags: list[uuid.UUID] = []
    voice_id: uuid.UUID | None = None
    agent_speaks_first: bool | None = None
    agent_id: uuid.UUID | None = None
    agent_branch: Short64 | None = None
    agent_commit_id: Short64 | None = None
    agent_branch_name: ShortText | None = None
    external_identifiers: Attributes = {}
    params: Attributes = {}
    cart: JSONObject | None = None
    analyzers: list[JSONObject] = []
    analysis_results: list[AnalysisResult] = []
    summary: LongText | None = None
    keyterms: list[ShortText] = []
    first_message: LongText | None = None


@section("calls")
async def load_calls(context: LoadContext, items: list[Any]) -> list[Any]:
    created = []
    for index, item in enumerate(parse_items("calls", items, CallItem)):
        try:
            await check_references(
                context.session,
                context.organization_id,
                agent_uuid=item.agent_id,
                voice_uuid=item.voice_id,
                tag_uuids=item.tags,
            )
        except InvalidInput as exc:
            raise LoadError(f"calls[{index}].{exc.loc[-1]}: {exc.message}") from None
        created_at = item.created_at or utcnow()
        call = Call(
            organization_id=context.organization_id,
            id=item.id or uuid.uuid4(),
            simple_uuid=item.simple_uuid or uuid.uuid4(),
            **item.model_dump(
                include={
                    "from_number",
                    "to_number",
                    "status",
                    "started_at",
                    "ended_at",
                    "duration",
                    "screen_pop_token",
                    "call_prompt",
                    "answered_by",
                    "language",
                    "transferred",
                    "handoff_metadata",
                    "direction",
                    "agent_speaks_first",
                    "agent_branch",
                    "agent_commit_id",
                    "agent_branch_name",
                    "external_identifiers",
                    "params",
                    "cart",
                    "analyzers",
                    "summary",
                    "keyterms",
                    "first_message",
                }
            ),
            transcripts=[t.model_dump(mode="json", exclude_unset=True) for t in item.transcripts],
            analysis_results=[
                r.model_dump(mode="json", exclude_unset=True) for r in item.analysis_results
            ],
            voice_uuid=item.voice_id,
            agent_uuid=item.agent_id,
            created_at=created_at,
            updated_at=item.updated_at or created_at,
        )
        await add_call(context.session, call, item.tags)
        created.append(str(call.id))
    return created
