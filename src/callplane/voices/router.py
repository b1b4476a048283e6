"""Voices. Errors are ``{"error": str}``; request validation uses the detail list (SPEC)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Query
from starlette.responses import Response

from callplane.http.deps import CurrentTenant, RuntimeDep, SessionDep
from callplane.http.families import VOICES
from callplane.http.responses import json_response
from callplane.http.routing import family_router
from callplane.kit.scopes import AGENTS
from callplane.voices import service
from callplane.voices.preview import MAX_PREVIEW_CHARS, preview_text, speak_preview
from callplane.voices.schemas import Voice, VoiceCreate, VoiceDeleted

router = family_router(VOICES, scopes=AGENTS, tags=["voices"])


@router.get("/voices", response_model=list[Voice], summary="List voices")
async def list_voices(session: SessionDep, tenant: CurrentTenant) -> Response:
    """The organization's voices, ordered by name."""
    voices = await service.list_voices(session, tenant.organization_id)
    return json_response(voices)


@router.post(
    "/voices",
    response_model=Voice,
    status_code=201,
    summary="Create a voice",
    responses={422: {"description": "Invalid input, or the engine is not installed here"}},
)
async def create_voice(
    body: VoiceCreate, session: SessionDep, runtime: RuntimeDep, tenant: CurrentTenant
) -> Response:
    """A voice speaking with one of the engines `callplane voices engines` lists."""
    voice = await service.create_voice(session, tenant.organization_id, body, runtime.settings)
    return json_response(voice, status_code=201)


@router.get(
    "/voices/{uuid}",
    response_model=Voice,
    summary="Read a voice",
    responses={404: {"description": "Voice not found"}},
)
async def get_voice(uuid: uuid.UUID, session: SessionDep, tenant: CurrentTenant) -> Response:
    """One voice of the organization."""
    voice = await service.get_voice(session, tenant.organization_id, uuid)
    return json_response(voice)


@router.delete(
    "/voices/{uuid}",
    response_model=VoiceDeleted,
    summary="Delete a voice",
    responses={
        404: {"description": "Voice not found"},
        409: {"description": "A call that has not finished uses the voice"},
    },
)
async def delete_voice(uuid: uuid.UUID, session: SessionDep, tenant: CurrentTenant) -> Response:
    """Delete a voice no unfinished call uses."""
    await service.delete_voice(session, tenant.organization_id, uuid)
    return json_response({"success": True})


@router.get(
    "/voices/{uuid}/preview",
    summary="Hear a voice",
    response_class=Response,
    responses={
        200: {"content": {"audio/wav": {}}, "description": "The text spoken, 8 kHz mono WAV"},
        404: {"description": "Voice not found"},
        409: {"description": "The voice's engine is not installed here"},
        503: {"description": "This server's speech synthesis is failing"},
    },
)
async def preview_voice(
    uuid: uuid.UUID,
    session: SessionDep,
    runtime: RuntimeDep,
    tenant: CurrentTenant,
    text: Annotated[
        str | None,
        Query(min_length=1, max_length=MAX_PREVIEW_CHARS, description="What to say"),
    ] = None,
) -> Response:
    """`text` (or a greeting) spoken in the voice, as a caller would hear it."""
    voice = await service.get_voice(session, tenant.organization_id, uuid)
    audio = await speak_preview(voice, preview_text(voice, text), runtime.settings)
    return Response(audio, media_type="audio/wav")
