"""Recording audio behind signed URLs (docs/api-contract.md#recordings-and-signed-urls): no API key,
403 when expired or altered.

Serves the stored bytes with their content type and HTTP Range support, so audio players can
seek. Errors are in the STATUS shape.
"""

from __future__ import annotations

import re
import uuid
from typing import Annotated

from fastapi import Header, Query
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from callplane.audit.requests import attribute, audited_read
from callplane.errors import NotFound
from callplane.http.deps import RuntimeDep, SessionDep
from callplane.http.families import STATUS
from callplane.http.responses import json_response
from callplane.http.routing import family_router
from callplane.kit.scopes import KEYLESS
from callplane.media.signing import Forbidden
from callplane.media.storage import StorageError
from callplane.recordings import service
from callplane.runtime import Runtime

router = family_router(STATUS, scopes=KEYLESS, tags=["recordings"])

_RANGE = re.compile(r"^bytes=([0-9]{0,18})-([0-9]{0,18})$")
_QUERY = ("expires", "signature")

_AUDIO_RESPONSES: dict[int | str, dict[str, object]] = {
    200: {"description": "The whole recording", "content": {"audio/*": {}}},
    206: {"description": "The requested byte range", "content": {"audio/*": {}}},
    403: {"description": "Expired or altered URL"},
    404: {"description": "The recording is gone or has no playable audio"},
    416: {"description": "Range not satisfiable"},
}


class _Unsatisfiable(Exception):
    pass


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The inclusive range a ``Range`` header asks for, or None to send everything.

    A header that is malformed or asks for several ranges is ignored (RFC 9110 §14.2 allows it);
    a well-formed range that selects nothing raises _Unsatisfiable (416).
    """
    if header is None:
        return None
    match = _RANGE.fullmatch(header.strip())
    if match is None:
        return None
    first, last = match.groups()
    if first == "" and last == "":
        return None
    if first == "":  # bytes=-n: the last n bytes
        suffix = int(last)
        if suffix == 0 or size == 0:
            raise _Unsatisfiable
        return max(size - suffix, 0), size - 1
    start = int(first)
    if last and int(last) < start:
        return None
    if start >= size:
        raise _Unsatisfiable
    end = min(int(last), size - 1) if last else size - 1
    return start, end


@router.get(
    "/recordings/{recording_id}/audio",
    summary="Download recording audio through a signed URL (no API key)",
    response_class=Response,
    responses=_AUDIO_RESPONSES,
)
@audited_read("recordings.read")
async def recording_audio(
    recording_id: str,
    request: Request,
    session: SessionDep,
    runtime: RuntimeDep,
    expires: Annotated[str | None, Query(description="Expiry, unix seconds")] = None,
    signature: Annotated[str | None, Query(description="HMAC of the URL")] = None,
    range_header: Annotated[str | None, Header(alias="Range")] = None,
) -> Response:
    """The audio of a recording, for anyone holding a valid signed URL (403 once it expired or when
    any part of it was altered). Supports single byte ranges."""
    # No key to rate-limit by: refused URLs count against the client's address like failed logins
    # (429 once it has failed too often), so signatures cannot be guessed at speed. A valid URL
    # is always served, as a valid key always is (http.auth).
    try:
        return await _serve(
            recording_id, request, session, runtime, expires, signature, range_header
        )
    except Forbidden:
        address = request.client.host if request.client else "unknown"
        await runtime.limiter.count_auth_failure(address)
        raise


async def _serve(
    recording_id: str,
    request: Request,
    session: AsyncSession,
    runtime: Runtime,
    expires: str | None,
    signature: str | None,
    range_header: str | None,
) -> Response:
    signer = runtime.signer
    signer.check_shape(expires, signature)
    assert expires is not None and signature is not None
    # The URL is used exactly as handed out: nothing added, repeated, or re-spelled.
    if sorted(k for k, _ in request.query_params.multi_items()) != sorted(_QUERY):
        raise Forbidden("Invalid signature")
    try:
        parsed_id = uuid.UUID(recording_id)
    except ValueError:
        raise Forbidden("Invalid signature") from None
    if str(parsed_id) != recording_id:
        raise Forbidden("Invalid signature")

    secret = await signer.secret(runtime.db)
    candidates = await service.recordings_with_id(session, parsed_id)
    recording = next(
        (
            r
            for r in candidates
            if signer.matches(secret, r.organization_id, recording_id, expires, signature)
        ),
        None,
    )
    if recording is None:
        raise Forbidden("Invalid signature")
    # No key here: the holder of a URL the organization's key was handed.
    attribute(request.scope, recording.organization_id, "signed_url")
    if not recording.playable or recording.storage_key is None:
        raise NotFound("Recording not found")
    try:
        size = await runtime.storage.size(recording.storage_key)
    except StorageError:
        raise NotFound("Recording not found") from None

    headers = {
        "Accept-Ranges": "bytes",
        "Cache-Control": f"private, max-age={max(int(expires) - int(signer.clock()), 0)}",
        "X-Content-Type-Options": "nosniff",
    }
    try:
        wanted = byte_range(range_header, size)
    except _Unsatisfiable:
        headers["Content-Range"] = f"bytes */{size}"
        message = "Requested range not satisfiable"
        return json_response(STATUS.body(message, [message]), 416, headers)

    start, end = wanted if wanted is not None else (0, size - 1)
    status = 206 if wanted is not None else 200
    if wanted is not None:
        headers["Content-Range"] = f"bytes {start}-{end}/{size}"
    headers["Content-Length"] = str(end - start + 1)
    if request.method == "HEAD" or size == 0:
        return Response(None, status, headers, media_type=recording.content_type)
    return StreamingResponse(
        runtime.storage.read(recording.storage_key, start, end),
        status,
        headers,
        media_type=recording.content_type,
    )


# HEAD (players probe the size before seeking): the same handler, kept out of the schema so the
# operation id stays unique.
router.add_api_route(
    "/recordings/{recording_id}/audio",
    recording_audio,
    methods=["HEAD"],
    response_class=Response,
    include_in_schema=False,
)
