"""The do-not-call list: numbers an organization must never call (``docs/campaigns.md``).

The dialer reads it at the moment it dials each attempt, in the transaction that creates the
attempt's call, so a number listed after the campaign started is still never called; and
``POST /calls`` refuses a listed number unless the request says ``ignore_suppression`` (a call
the person asked for).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.kit.db import dialect_insert
from callplane.kit.tenancy import select_owned
from callplane.models.base import utcnow
from callplane.models.campaigns import Suppression

_LOOKUP_BATCH = 500


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


async def is_suppressed(session: AsyncSession, organization_id: int, number: str) -> bool:
    return bool(await suppressed_among(session, organization_id, [number]))


async def record_opt_out(
    session: AsyncSession, organization_id: int, call_id: uuid.UUID, number: str
) -> None:
    """A person asked during a call not to be called again: the number is listed with the
    call's id as its reason. The campaign recipient that call is an attempt of becomes
    ``opted_out`` when the call has ended (``campaigns.outcomes`` reads the reason), so the
    campaign is not done while the goodbye is still being said."""
    await suppress(session, organization_id, number, opt_out_reason(call_id))


def opt_out_reason(call_id: uuid.UUID) -> str:
    return f"asked during call {call_id}"
