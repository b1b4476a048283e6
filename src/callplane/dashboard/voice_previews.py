"""Voices: the organization's voices with a play button each (a line of one's own, or the
greeting), and which agents speak with each; the same preview as
``GET /v1/voices/{uuid}/preview``, for the signed-in person's organization. A voice is added and
deleted through the API's own model and service (``VoiceCreate``, ``create_voice``)."""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Query
from pydantic import ValidationError
from sqlalchemy import select
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from callplane.dashboard.forms import fields
from callplane.dashboard.rendering import render
from callplane.dashboard.routing import CurrentPerson, dashboard_router, runtime_of
from callplane.errors import Conflict, InvalidInput
from callplane.http.deps import SessionDep
from callplane.kit.messages import field_messages
from callplane.models.agents import Agent, AgentBranch, AgentCommit
from callplane.speech.engines import list_engines, spoken_default
from callplane.voices import service
from callplane.voices.preview import MAX_PREVIEW_CHARS, preview_text, speak_preview
from callplane.voices.schemas import VoiceCreate

router = dashboard_router()


async def _page(
    request: Request,
    session: Any,
    org: int,
    say: str = "",
    status: int = 200,
    errors: list[str] | None = None,
    values: dict[str, str] | None = None,
) -> Response:
    voices = await service.list_voices(session, org)
    # Which agents' branch heads speak with each voice (at most a few hundred rows).
    rows = await session.execute(
        select(Agent.uuid, Agent.name, AgentBranch.name, AgentCommit.config)
        .join(
            AgentBranch,
            (AgentBranch.agent_id == Agent.id) & (AgentBranch.organization_id == org),
        )
        .join(
            AgentCommit,
            (AgentCommit.id == AgentBranch.head) & (AgentCommit.organization_id == org),
        )
        .where(Agent.organization_id == org, Agent.archived.is_(False))
        .limit(1000)
    )
    used: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for agent_id, agent_name, branch, config in rows:
        voice_id = (config or {}).get("voice_id")
        if voice_id:
            entry = used[str(voice_id)].setdefault(
                str(agent_id), {"name": agent_name, "branches": []}
            )
            entry["branches"].append(branch)
    settings = runtime_of(request).settings
    # Listing espeak-ng's voices runs it: off the event loop.
    engines = await asyncio.to_thread(list_engines, settings)
    # What a call without a voice really speaks with (espeak-ng where Piper's voice is absent).
    default_engine = await asyncio.to_thread(spoken_default, settings)
    return render(
        request,
        "voices.html",
        status,
        section="voices",
        voices=voices,
        used=used,
        say=say.strip(),
        default_engine=default_engine,
        engines=[e.name for e in engines],
        errors=errors or [],
        values=values or {},
        notice=request.query_params.get("notice"),
    )


@router.get("/voices")
async def voices_page(
    request: Request,
    session: SessionDep,
    person: CurrentPerson,
    say: Annotated[str, Query(max_length=MAX_PREVIEW_CHARS)] = "",
) -> Response:
    return await _page(request, session, person.organization_id, say)


def _words(text: str) -> list[str]:
    return [w.strip() for w in text.split(",") if w.strip()]


def _back(request: Request, notice: str) -> RedirectResponse:
    base = request.scope.get("root_path", "")
    return RedirectResponse(f"{base}/voices?notice={quote(notice, safe='')}", 303)


@router.post("/voices")
async def create_voice(request: Request, session: SessionDep, person: CurrentPerson) -> Response:
    form = await fields(request)
    body: dict[str, Any] = {
        "name": form.get("name", ""),
        "engine": form.get("engine", "").strip(),
        "languages": _words(form.get("languages", "")),
        "tags": _words(form.get("tags", "")),
    }
    if form.get("description", "").strip():
        body["description"] = form["description"].strip()
    org = person.organization_id
    try:
        voice = await service.create_voice(
            session, org, VoiceCreate.model_validate(body), runtime_of(request).settings
        )
    except ValidationError as exc:
        return await _page(request, session, org, "", 422, field_messages(exc.errors()), form)
    except InvalidInput as exc:
        field = exc.loc[-1] if len(exc.loc) > 1 else ""
        problem = f"{field}: {exc.message}" if field else exc.message
        return await _page(request, session, org, "", 422, [problem], form)
    return _back(request, f"Voice {voice.name} added.")


@router.post("/voices/{voice_uuid}/delete")
async def delete_voice(
    request: Request, voice_uuid: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    org = person.organization_id
    voice = await service.get_voice(session, org, voice_uuid)
    try:
        await service.delete_voice(session, org, voice_uuid)
    except Conflict as exc:
        return await _page(request, session, org, "", 409, [f"{voice.name}: {exc.message}"])
    return _back(request, f"Voice {voice.name} deleted.")


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
