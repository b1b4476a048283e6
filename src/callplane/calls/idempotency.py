"""``Idempotency-Key`` for ``POST /calls`` (docs/api-contract.md#extension-routes).

The first request with a key claims it with one ``INSERT … ON CONFLICT`` in the same
transaction that creates the call, and stores its response there. A second request with the key
finds the claim: the same body gets the first response back, another body 409. Two concurrent
first requests cannot both claim: the primary key (organization, key) lets one insert win and
makes the other wait for it (PostgreSQL) or queue behind it (SQLite's BEGIN IMMEDIATE).
A failed request rolls its claim back with everything else, so only successes are replayed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.errors import Conflict
from callplane.kit.db import dialect_insert
from callplane.kit.tenancy import select_owned, update_owned
from callplane.models.base import utcnow
from callplane.models.calls import CallIdempotencyKey

#: Keys are honoured at least this long; an older claim may be taken over by a new request.
KEY_LIFETIME = timedelta(hours=24)


@dataclass(frozen=True)
class StoredResponse:
    status_code: int
    body: dict[str, Any]


def request_digest(body: dict[str, Any]) -> str:
    canonical = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


async def claim(
    session: AsyncSession, organization_id: int, key: str, digest: str
) -> StoredResponse | None:
    """Claim ``key`` for this request (None), or return the response stored under it."""
    now = utcnow()
    table = CallIdempotencyKey.__table__
    statement = dialect_insert(session, table).values(
        organization_id=organization_id, key=key, request_digest=digest, created_at=now
    )
    statement = statement.on_conflict_do_update(
        index_elements=[table.c.organization_id, table.c.key],
        set_={
            "request_digest": statement.excluded.request_digest,
            "response_status": None,
            "response_body": None,
            "created_at": statement.excluded.created_at,
        },
        where=table.c.created_at < now - KEY_LIFETIME,
    ).returning(table.c.key)
    if (await session.execute(statement)).first() is not None:
        return None
    stored = (
        await session.execute(
            select_owned(
                CallIdempotencyKey,
                organization_id,
                CallIdempotencyKey.request_digest,
                CallIdempotencyKey.response_status,
                CallIdempotencyKey.response_body,
            ).where(CallIdempotencyKey.key == key)
        )
    ).one()
    if stored.request_digest != digest:
        raise Conflict("Idempotency-Key was already used with a different request body")
    if stored.response_status is None or stored.response_body is None:
        raise Conflict("A request with this Idempotency-Key is still in progress")
    return StoredResponse(stored.response_status, stored.response_body)


async def record(
    session: AsyncSession, organization_id: int, key: str, status_code: int, body: Any
) -> None:
    await session.execute(
        update_owned(CallIdempotencyKey, organization_id)
        .where(CallIdempotencyKey.key == key)
        .values(response_status=status_code, response_body=body)
        .execution_options(synchronize_session=False)
    )
