"""The do-not-call list's routes (the rules are in ``campaigns.donotcall``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from fastapi import Path, Query
from sqlalchemy import literal_column
from starlette.responses import Response

from callplane.campaigns.donotcall import suppress, suppression_wire
from callplane.campaigns.schemas import SuppressionCreate, SuppressionEnvelope, SuppressionList
from callplane.errors import InvalidInput, NotFound
from callplane.http.deps import CurrentTenant, SessionDep
from callplane.http.families import STATUS
from callplane.http.responses import json_response
from callplane.http.routing import family_router
from callplane.kit.e164 import phone_number
from callplane.kit.pagination import count, offset, total_pages
from callplane.kit.scopes import CAMPAIGNS
from callplane.kit.tenancy import delete_owned, select_owned
from callplane.models.campaigns import Suppression

router = family_router(STATUS, scopes=CAMPAIGNS, tags=["suppressions"])


def _number(value: str, loc: tuple[str | int, ...]) -> str:
    try:
        return phone_number(value)
    except ValueError as exc:
        raise InvalidInput(f"phone_number: {exc}", loc=loc) from None


@router.post(
    "/suppressions",
    response_model=SuppressionEnvelope,
    status_code=201,
    summary="Add a number to the do-not-call list",
)
async def create_suppression(
    body: SuppressionCreate, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """The number is never called again by a campaign, and `POST /calls` to it is refused
    unless the call says `ignore_suppression`."""
    row = await suppress(session, tenant.organization_id, body.phone_number, body.reason)
    return json_response({"suppression": suppression_wire(row)}, 201)


@router.get("/suppressions", response_model=SuppressionList, summary="The do-not-call list")
async def list_suppressions(
    session: SessionDep,
    tenant: CurrentTenant,
    phone_number: Annotated[
        str | None, Query(min_length=1, max_length=64, description="Only this number")
    ] = None,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=100)] = 20,
) -> Response:
    """Newest first; `phone_number` finds one number (in any spelling of it)."""
    query = select_owned(Suppression, tenant.organization_id)
    if phone_number is not None:
        query = query.where(
            Suppression.phone_number == _number(phone_number, ("query", "phone_number"))
        )
    total = await count(session, query)
    rows: Sequence[Suppression] = (
        await session.scalars(
            query.order_by(Suppression.created_at.desc(), literal_column("phone_number"))
            .limit(page_size)
            .offset(offset(page, page_size))
        )
    ).all()
    return json_response(
        {
            "suppressions": [suppression_wire(r) for r in rows],
            "total_count": total,
            "page": page,
            "page_size": page_size,
            "total_pages": total_pages(total, page_size),
        }
    )


@router.delete(
    "/suppressions/{phone_number}",
    summary="Remove a number from the do-not-call list",
    responses={200: {"description": "Removed"}},
)
async def delete_suppression(
    phone_number: Annotated[str, Path(max_length=64, description="The number, in any spelling")],
    session: SessionDep,
    tenant: CurrentTenant,
) -> Response:
    """The number may be called again; 404 when it is not on the list."""
    number = _number(phone_number, ("path", "phone_number"))
    deleted = await session.execute(
        delete_owned(Suppression, tenant.organization_id).where(Suppression.phone_number == number)
    )
    if not getattr(deleted, "rowcount", 0):
        raise NotFound("Number is not on the do-not-call list")
    return json_response({"success": True})
