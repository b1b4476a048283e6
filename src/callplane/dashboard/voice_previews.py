"""A voice heard from the dashboard (the agent editor's play button): the same preview as
``GET /v1/voices/{uuid}/preview``, for the signed-in person's organization."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from callplane.dashboard.routing import CurrentPerson, dashboard_router, runtime_of
from callplane.http.deps import SessionDep
from callplane.voices import service
from callplane.voices.preview import preview_text, speak_preview

router = dashboard_router()


@router.get("/voices/{voice_uuid}/preview")
async def preview(
    request: Request, voice_uuid: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    voice = await service.get_voice(session, person.organization_id, voice_uuid)
    audio = await speak_preview(voice, preview_text(voice, None), runtime_of(request).settings)
    return Response(audio, media_type="audio/wav")
