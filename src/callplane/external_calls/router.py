"""External calls. Request validation uses the detail list; every other error is
``{"status": "error", "success": false, "error", "errors"}`` (SPEC,
docs/api-contract.md#error-shapes)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

from fastapi import Header, Query
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from callplane.errors import InvalidInput
from callplane.external_calls import reads, service, upload_body, uploads
from callplane.external_calls.schemas import (
    ExternalCall,
    ExternalCallCreate,
    ExternalCallList,
    Recording,
)
from callplane.external_calls.wire import wire_call, wire_leg
from callplane.http.deps import CurrentTenant, RuntimeDep, SessionDep
from callplane.http.families import EXTERNAL_CALLS
from callplane.http.responses import json_response
from callplane.http.routing import family_router, streamed_body
from callplane.kit.scopes import CALLS
from callplane.speech.decoding import media_format

router = family_router(EXTERNAL_CALLS, scopes=CALLS, tags=["external_calls"])

#: The list's paging bounds (also what ``hot`` takes without the route).
MAX_PAGE = 1_000_000
MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 20


@router.get("/external_calls", response_model=ExternalCallList, summary="List external calls")
async def list_external_calls(
    session: SessionDep,
    runtime: RuntimeDep,
    tenant: CurrentTenant,
    page: Annotated[int, Query(ge=1, le=MAX_PAGE, description="Page number, from 1")] = 1,
    page_size: Annotated[
        int, Query(ge=1, le=MAX_PAGE_SIZE, description="Calls per page")
    ] = DEFAULT_PAGE_SIZE,
) -> Response:
    """External call sessions of the organization, newest first."""
    body = await reads.external_calls_page(
        session, runtime, tenant.organization_id, page, page_size
    )
    return json_response(body)


@router.get(
    "/external_calls/{uuid}",
    response_model=ExternalCall,
    summary="Read an external call session",
    responses={404: {"description": "External call not found"}},
)
async def get_external_call(
    uuid: uuid.UUID, session: SessionDep, runtime: RuntimeDep, tenant: CurrentTenant
) -> Response:
    """An external call session with its visible recording legs, their transcripts and summaries,
    and signed playback URLs (valid one hour) for the playable legs."""
    body = await reads.external_call_body(session, runtime, tenant.organization_id, uuid)
    return json_response(body)


@router.post(
    "/external_calls",
    status_code=201,
    response_model=ExternalCall,
    summary="Create an external call session (its legs are uploaded next)",
)
async def create_external_call(
    body: ExternalCallCreate, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Register a recorded call from another system (status processing, no legs yet); upload its
    recording legs next. They are transcribed and summarised locally."""
    call = await service.create_external_call(
        session, tenant.organization_id, body.model_dump(exclude_unset=False)
    )
    return json_response(wire_call(call, [], {}), 201)


_BINARY = {"schema": {"type": "string", "format": "binary"}}
_AUDIO_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": (
            "The recording itself (streamed; at most CALLPLANE_MAX_RECORDING_BYTES): audio with "
            "its type, application/octet-stream (the format is read from the audio), or "
            "multipart/form-data with one file part"
        ),
        "content": {
            **{media: _BINARY for media in uploads.CANONICAL_TYPES.values()},
            "application/octet-stream": _BINARY,
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {"file": {"type": "string", "format": "binary"}},
                    "required": ["file"],
                }
            },
        },
    }
}


@router.post(
    "/external_calls/{uuid}/recordings",
    status_code=201,
    response_model=Recording,
    summary="Upload a recording leg (the audio is the request body)",
    openapi_extra=_AUDIO_BODY,
    responses={
        404: {"description": "External call not found"},
        413: {"description": "Recording larger than CALLPLANE_MAX_RECORDING_BYTES"},
    },
)
@streamed_body
async def upload_recording(
    uuid: uuid.UUID,
    request: Request,
    session: SessionDep,
    runtime: RuntimeDep,
    tenant: CurrentTenant,
    content_type: Annotated[str | None, Header(description=upload_body.ACCEPTED)] = None,
    file_name: Annotated[
        str | None, Query(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f\x7f/\\]+$")
    ] = None,
    started_at: Annotated[datetime | None, Query(description="when the leg began")] = None,
    redact: Annotated[
        bool, Query(description="replace spoken card and account numbers before playback")
    ] = False,
) -> Response:
    """Upload one recording leg of an external call: the body is the audio itself (WAV, MP3, Ogg
    or FLAC; typed, or application/octet-stream), or a multipart form with one file part. The leg
    starts pending and is transcribed in the background; an undecodable or silent upload ends as
    a leg in error."""
    if media_format(content_type) is None and not upload_body.streamable(content_type):
        raise upload_body.unaccepted()
    limit = runtime.settings.max_recording_bytes
    uploads.check_declared_length(request.headers.get("content-length"), limit)
    organization_id = tenant.organization_id
    await service.get_external_call(session, organization_id, uuid)
    # Nothing is written yet: end the transaction so no database lock or connection is held
    # while the body streams in (a large upload over a slow link takes minutes).
    await session.commit()
    try:
        body = await upload_body.open_body(content_type, request.stream())
        leg_id, key, size = await uploads.store_upload(
            runtime.storage, organization_id, body.chunks, body.media_type, limit
        )
    except ClientDisconnect:
        raise InvalidInput("The upload was interrupted", type_="upload_interrupted") from None
    leg = await uploads.attach_leg(
        session,
        runtime.storage,
        organization_id,
        uuid,
        leg_id=leg_id,
        key=key,
        size=size,
        media_type=body.media_type,
        file_name=file_name or body.file_name,
        started_at=started_at,
        redact=redact,
    )
    return json_response(wire_leg(leg), 201)
