"""Contact data. Every error, validation included, is the STATUS shape (SPEC,
docs/api-contract.md#error-shapes): ``{"status": "error", "success": false, "error": str, "errors":
[str]}``.

The PUT body (parsed by the body policy, ``http.body``) is validated by the service rather than by
a pydantic parameter:
the rules are exact JSON ones (an integral number is an integer, a boolean is not, the data size
is that of its compact serialization), and the validated data is stored as the very text that was
measured.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from fastapi import Path, Query
from starlette.requests import Request
from starlette.responses import Response

from callplane.audit.requests import audited_read
from callplane.contacts import service
from callplane.contacts.identifiers import normalize_identifier
from callplane.contacts.schemas import (
    ContactData,
    ContactDataWrite,
    ContactList,
    ContactSummary,
    Deleted,
    contact_data_json,
)
from callplane.http.deps import CurrentTenant, SessionDep
from callplane.http.families import STATUS, StatusError
from callplane.http.responses import json_response
from callplane.http.routing import exact_json_text, family_router
from callplane.http.unit_of_work import one_transaction
from callplane.kit.pagination import total_pages
from callplane.kit.scopes import CONTACTS
from callplane.models.base import utcnow

router = family_router(STATUS, scopes=CONTACTS, tags=["contacts"])

T = TypeVar("T")


async def _one_statement(
    request: Request, *, write: bool, run: Callable[[service.Db], Awaitable[T]]
) -> T:
    """Run the one statement of a PUT or GET in a transaction of its own when authentication
    opened no session (a cached key), else on the request's session
    (``http.unit_of_work.one_transaction``); measured, skipping the session is most of what a PUT
    gains (bench/README.md "Contact data")."""
    return await one_transaction(request, run, write=write)


PhoneNumberPath = Annotated[
    str,
    Path(
        alias="phoneNumber",
        description="A phone number (US numbers formatted or as digits; others with their + "
        "country code, URL-encoded as %2B) or any other identifier of 1–128 characters, kept "
        "verbatim. A '/' cannot be part of it.",
    ),
]

_JSON = "application/json"
_DATA_PATH = "/contacts/{phoneNumber}/data"
_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"description": "No data stored for this identifier, or it expired"}
}


@router.put(
    _DATA_PATH,
    response_model=ContactData,
    summary="Replace stored contact data",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {_JSON: {"schema": ContactDataWrite.model_json_schema()}},
        }
    },
    responses={409: {"description": "expectedRevision differs", "model": StatusError}},
)
@exact_json_text
async def put_contact_data(
    phone_number: PhoneNumberPath, request: Request, tenant: CurrentTenant
) -> Response:
    """Replace the whole JSON object stored for a caller identifier (a phone number, normalized
    to E.164, or any other identifier, kept verbatim). The revision grows by one on every write;
    send expectedRevision for optimistic concurrency (409 when it differs). ttlSeconds makes the
    data expire."""
    identifier = normalize_identifier(phone_number)
    write = service.parse_write(await request.json())
    now = utcnow()
    stored = await _one_statement(
        request,
        write=True,
        run=lambda db: service.put_contact_data(
            db, tenant.organization_id, identifier, write, now=now
        ),
    )
    return Response(contact_data_json(stored, now), media_type=_JSON)


@router.get(
    _DATA_PATH, response_model=ContactData, summary="Read contact data", responses=_NOT_FOUND
)
@audited_read("contacts.read_data")
async def get_contact_data(
    phone_number: PhoneNumberPath, request: Request, tenant: CurrentTenant
) -> Response:
    """The data stored for a caller identifier (404 when none, or when it expired)."""
    identifier = normalize_identifier(phone_number)
    now = utcnow()
    stored = await _one_statement(
        request,
        write=False,
        run=lambda db: service.get_contact_data(db, tenant.organization_id, identifier, now=now),
    )
    return Response(contact_data_json(stored, now), media_type=_JSON)


@router.delete(
    _DATA_PATH, response_model=Deleted, summary="Delete contact data", responses=_NOT_FOUND
)
async def delete_contact_data(
    phone_number: PhoneNumberPath, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Remove the data stored for a caller identifier; its revision counter is kept."""
    identifier = normalize_identifier(phone_number)
    await service.delete_contact_data(session, tenant.organization_id, identifier)
    return json_response({"success": True})


@router.get("/contacts", response_model=ContactList, summary="List contacts with stored data")
@audited_read("contacts.list")
async def list_contacts(
    session: SessionDep,
    tenant: CurrentTenant,
    page: Annotated[int, Query(ge=1, le=1_000_000, description="Page number, from 1")] = 1,
    page_size: Annotated[int, Query(ge=1, le=100, description="Contacts per page")] = 20,
) -> Response:
    """Every contact of the organization that has data, with revision and expiry."""
    rows, total = await service.list_contacts(session, tenant.organization_id, page, page_size)
    return json_response(
        ContactList(
            contacts=[
                ContactSummary(
                    phoneNumber=r.identifier,
                    revision=r.revision,
                    expiresAt=r.expires_at,
                    created_at=r.created_at,
                    updated_at=r.updated_at,
                )
                for r in rows
            ],
            total_count=total,
            page=page,
            page_size=page_size,
            total_pages=total_pages(total, page_size),
        )
    )
