"""Voices: the organization's voices with a play button each (a line of one's own, or the
greeting), and which agents speak with each; the same preview as
``GET /v1/voices/{uuid}/preview``, for the signed-in person's organization."""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import Annotated

from fastapi import Query
from sqlalchemy import select
from starlette.requests import Request
from starlette.responses import Response

from callplane.dashboard.rendering import render
from callplane.dashboard.routing import CurrentPerson, dashboard_router, runtime_of
from callplane.http.deps import SessionDep
from callplane.models.agents import Agent, AgentBranch, AgentCommit
from callplane.voices import service
from callplane.voices.preview import MAX_PREVIEW_CHARS, preview_text, speak_preview

router = dashboard_router()


@router.get("/voices")
async def voices_page(
    request: Request,
    session: SessionDep,
    person: CurrentPerson,
    say: Annotated[str, Query(max_length=MAX_PREVIEW_CHARS)] = "",
) -> Response:
    org = person.organization_id
    voices = await service.list_voices(session, org)
    # Which agents' branch heads speak with each voice (at most a few hundred rows).
    rows = await session.execute(
        select(Agent.uuid, Agent.name, AgentBranch.name, AgentCommit.config)
        .join(
            AgentBranch, (AgentBranch.agent_id == Agent.id) & (AgentBranch.organization_id == org)
        )
        .join(
            AgentCommit,
            (AgentCommit.id == AgentBranch.head) & (AgentCommit.organization_id == org),
        )
        .where(Agent.organization_id == org, Agent.archived.is_(False))
        .limit(1000)
    )
    used: dict[str, dict[str, dict[str, object]]] = defaultdict(dict)
    for agent_id, agent_name, branch, config in rows:
        voice_id = (config or {}).get("voice_id")
        if voice_id:
            entry = used[str(voice_id)].setdefault(
                str(agent_id), {"name": agent_name, "branches": []}
            )
            entry["branches"].append(branch)  # type: ignore[attr-defined]
    return render(
        request,
        "voices.html",
        section="voices",
        voices=voices,
        used=used,
        say=say.strip(),
        default_engine=runtime_of(request).settings.voice_engine,
    )


@router.get("/voices/{voice_uuid}/preview")
async def preview(
    request: Request,
    voice_uuid: uuid.UUID,
    session: SessionDep,
    person: CurrentPerson,
    text: Annotated[str | None, Query(min_length=1, max_length=MAX_PREVIEW_CHARS)] = None,
) -> Response:
    voice = await service.get_voice(session, person.organization_id, voice_uuid)
    audio = await speak_preview(voice, preview_text(voice, text), runtime_of(request).settings)
    return Response(audio, media_type="audio/wav")
