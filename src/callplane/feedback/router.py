"""Feedback on call transcripts and its notes. Validation errors are the detail list
``{"detail": [{loc, msg, type}]}``; every other error is ``{"detail": str}`` (SPEC;
docs/api-contract.md#error-shapes)."""

from __future__ import annotations

import uuid

from starlette.responses import Response

from callplane.feedback import service
from callplane.feedback.schemas import (
    FeedbackCreate,
    FeedbackEnvelope,
    FeedbackList,
    FeedbackResolve,
    NoteAdded,
    NoteCreate,
)
from callplane.http.deps import CurrentTenant, SessionDep
from callplane.http.families import DETAIL
from callplane.http.responses import json_response
from callplane.http.routing import family_router
from callplane.kit.scopes import CALLS

router = family_router(DETAIL, scopes=CALLS, tags=["feedback"])


@router.get("/calls/{uuid}/feedback", response_model=FeedbackList, summary="List a call's feedback")
async def list_call_feedback(
    uuid: uuid.UUID, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """The feedback entries left on a call's transcript, oldest first, each with its notes."""
    org = tenant.organization_id
    entries = await service.list_feedback(session, org, uuid)
    return json_response({"feedback": await service.entries_wire(session, org, entries)})


@router.post(
    "/calls/{uuid}/feedback",
    response_model=FeedbackEnvelope,
    status_code=201,
    summary="Leave feedback on a call's transcript",
)
async def create_call_feedback(
    uuid: uuid.UUID, body: FeedbackCreate, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Leave feedback on a call's transcript, optionally on one line (transcript_index)."""
    org = tenant.organization_id
    entry = await service.create_feedback(
        session, org, uuid, transcript_index=body.transcript_index, comment=body.comment
    )
    [wire] = await service.entries_wire(session, org, [entry])
    return json_response({"success": True, "feedback": wire}, 201)


@router.post(
    "/feedback/{uuid}/resolve",
    response_model=FeedbackEnvelope,
    summary="Resolve or reopen a feedback entry",
)
async def resolve_feedback(
    uuid: uuid.UUID, body: FeedbackResolve, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Mark a feedback entry resolved, or reopen it."""
    org = tenant.organization_id
    entry = await service.resolve_feedback(session, org, uuid, body.resolved)
    [wire] = await service.entries_wire(session, org, [entry])
    return json_response({"success": True, "feedback": wire})


@router.post(
    "/feedback/{uuid}/notes",
    response_model=NoteAdded,
    summary="Add a note to a feedback entry",
)
async def add_feedback_note(
    uuid: uuid.UUID, body: NoteCreate, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Append a note to a feedback entry. The author is recorded as API; the entry's resolved state
    does not change."""
    note = await service.add_note(session, tenant.organization_id, uuid, body.note)
    return json_response({"success": True, "feedback_uuid": uuid, "note": note})
