"""Scoped API keys through the API (``POST/GET /api_keys``, ``DELETE /api_keys/{id}``): a key
hands out at most the scopes it holds itself (``kit.scopes.covers``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.errors import Forbidden, InvalidInput
from callplane.kit.pagination import offset
from callplane.kit.scopes import covers, loaded, parse_scopes, stored
from callplane.kit.tenancy import Tenant, select_owned
from callplane.models.orgs import ApiKey
from callplane.orgs.service import IssuedKey, issue_key


def key_wire(key: ApiKey) -> dict[str, Any]:
    return {
        "id": key.id,
        "name": key.name,
        "scopes": sorted(loaded(key.scopes)),
        "expires_at": key.expires_at,
        "created_at": key.created_at,
        "revoked_at": key.revoked_at,
    }


async def create_key(
    session: AsyncSession,
    tenant: Tenant,
    name: str,
    scopes: Sequence[str],
    expires_at: datetime | None,
) -> tuple[IssuedKey, ApiKey]:
    asked = parse_scopes(scopes)
    if not covers(tenant.scopes, asked):
        missing = sorted(asked - tenant.scopes)
        raise Forbidden(
            "A key cannot give another key scopes it lacks: " + ", ".join(missing or asked)
        )
    if expires_at is not None:
        if expires_at.tzinfo is None:
            expires_at = expires_at.replace(tzinfo=UTC)
        if expires_at <= datetime.now(UTC):
            raise InvalidInput("expires_at must be in the future", loc=("body", "expires_at"))
    issued = await issue_key(
        session, tenant.organization_id, name, scopes=stored(asked), expires_at=expires_at
    )
    key = await session.scalar(
        select_owned(ApiKey, tenant.organization_id).where(ApiKey.id == issued.id)
    )
    assert key is not None  # flushed just now, in this transaction
    return issued, key


async def page_of_keys(
    session: AsyncSession, organization_id: int, page: int, page_size: int
) -> tuple[list[dict[str, Any]], int]:
    total = await session.scalar(select_owned(ApiKey, organization_id, func.count()).order_by(None))
    rows = await session.scalars(
        select_owned(ApiKey, organization_id)
        .order_by(ApiKey.id)
        .offset(offset(page, page_size))
        .limit(page_size)
    )
    return [key_wire(key) for key in rows], int(total or 0)
