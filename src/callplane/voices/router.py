"""Voices. Errors are ``{"error": str}``; request validation uses the detail list (SPEC)."""

from __future__ import annotations

import uuid

from starlette.responses import Response

from callplane.http.deps import CurrentTenant, SessionDep
from callplane.http.families import VOICES
from callplane.http.responses import json_response
from callplane.http.routing import family_router
from callplane.voices import service
from callplane.voices.schemas import Voice

router = family_router(VOICES, tags=["voices"])


@router.get("/voices", response_model=list[Voice], summary="List voices")
async def list_voices(session: SessionDep, tenant: CurrentTenant) -> Response:
    """The organization's voices, ordered by name."""
    voices = await service.list_voices(session, tenant.organization_id)
    return json_response(voices)


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
