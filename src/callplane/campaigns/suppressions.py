"""The do-not-call list: numbers an organization must never call (``docs/campaigns.md``).

The dialer reads it at the moment it dials each attempt, and ``POST /calls`` refuses a listed
number unless the request says ``ignore_suppression`` (a call the person asked for).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Any

from fastapi import Path, Query
from sqlalchemy import literal_column
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from callplane.campaigns.schemas import SuppressionCreate, SuppressionEnvelope, SuppressionList
from callplane.errors import InvalidInput, NotFound
from callplane.http.deps import CurrentTenant, SessionDep
from callplane.http.families import STATUS
from callplane.http.responses import json_response
from callplane.http.routing import family_router
from callplane.kit.db import dialect_insert
from callplane.kit.e164 import phone_number
from callplane.kit.pagination import count, offset, total_pages
from callplane.kit.tenancy import delete_owned, select_owned
from callplane.models.base import utcnow
from callplane.models.campaigns import Suppression

router = family_router(STATUS, tags=["suppressions"])
_LOOKUP_BATCH = 500


def _number(value: str, loc: tuple[str | int, ...]) -> str:
    try:
        return phone_number(value)
    except ValueError as exc:
        raise InvalidInput(f"phone_number: {exc}", loc=loc) from None


async def suppress(
    session: AsyncSession, organization_id: int, number: str, reason: str | None
) -> Suppression:
    """Add a number (again: its reason and time are replaced)."""
    now = utcnow()
    values = {"organization_id": organization_id, "phone_number": number, "reason": reason}
    table = Suppression.__table__
    statement = dialect_insert(session, table).values(**values, created_at=now)
    statement = statement.on_conflict_do_update(
        index_elements=[table.c.organization_id, table.c.phone_number],
        set_={"reason": reason, "created_at": now},
    )
    await session.execute(statement)
    return Suppression(**values, created_at=now)


async def suppressed_among(
    session: AsyncSession, organization_id: int, numbers: Iterable[str]
) -> set[str]:
    """Which of ``numbers`` are on the organization's list (read now, in the caller's
    transaction)."""
    wanted = list(dict.fromkeys(numbers))
    found: set[str] = set()
    for start in range(0, len(wanted), _LOOKUP_BATCH):
        found.update(
            await session.scalars(
                select_owned(Suppression, organization_id, Suppression.phone_number).where(
                    Suppression.phone_number.in_(wanted[start : start + _LOOKUP_BATCH])
                )
            )
        )
    return found


def suppression_wire(row: Suppression) -> dict[str, Any]:
    return {"phone_number": row.phone_number, "reason": row.reason, "created_at": row.created_at}


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
