"""Organizations and their API keys (docs/api-contract.md#identity-and-tenancy).

Keys are ``cp_`` + 43 url-safe characters (32 random bytes). Only their SHA-256 is stored: the
plain key is returned once, at creation.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.errors import NotFound
from callplane.kit.scopes import loaded
from callplane.kit.tenancy import Tenant, across_organizations, owned_by, select_owned
from callplane.models.base import utcnow
from callplane.models.orgs import ApiKey, Organization

KEY_PREFIX = "cp_"


def hash_key(plain: str) -> str:
    return hashlib.sha256(plain.encode("utf-8", "surrogateescape")).hexdigest()


def generate_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class IssuedKey:
    id: int
    organization_id: int
    api_key: str


async def create_organization(session: AsyncSession, name: str) -> Organization:
    org = Organization(name=name)
    session.add(org)
    await session.flush()
    return org


async def get_organization(session: AsyncSession, organization_id: int) -> Organization:
    org = await session.get(Organization, organization_id)
    if org is None:
        raise NotFound(f"Organization {organization_id} not found")
    return org


async def issue_key(
    session: AsyncSession,
    organization_id: int,
    name: str = "default",
    plain: str | None = None,
    *,
    scopes: str = "*",
    expires_at: datetime | None = None,
) -> IssuedKey:
    """Create an API key. ``plain`` lets the demo derive its key deterministically; ``scopes``
    as ``kit.scopes.stored`` gives them."""
    await get_organization(session, organization_id)
    plain = plain or generate_key()
    key = ApiKey(
        organization_id=organization_id,
        name=name,
        key_hash=hash_key(plain),
        scopes=scopes,
        expires_at=expires_at,
    )
    session.add(key)
    await session.flush()
    return IssuedKey(id=key.id, organization_id=organization_id, api_key=plain)


async def revoke_key(
    session: AsyncSession, key_id: int, organization_id: int | None = None
) -> None:
    """Revoke a key; with ``organization_id`` (the dashboard), only a key of that organization.

    Without it (``callplane keys revoke KEY_ID``, an operator command) the key is named by its
    id alone, whatever its organization.
    """
    reason = "callplane keys revoke KEY_ID: an operator command names a key by its id alone"

    def scoped(statement: Any) -> Any:
        if organization_id is None:
            return across_organizations(statement, reason)
        return statement.where(owned_by(ApiKey, organization_id))

    result = await session.execute(
        scoped(
            update(ApiKey)
            .where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
            .values(revoked_at=utcnow())
            .returning(ApiKey.id)
        )
    )
    exists = await session.scalar(scoped(select(ApiKey.id).where(ApiKey.id == key_id)))
    if result.first() is None and exists is None:
        raise NotFound(f"API key {key_id} not found")


async def list_keys(session: AsyncSession, organization_id: int) -> Sequence[ApiKey]:
    """The organization's keys, oldest first (never the keys themselves: only hashes are kept)."""
    rows = await session.scalars(select_owned(ApiKey, organization_id).order_by(ApiKey.id))
    return rows.all()


# Plain Core columns: the statement skips the ORM execution path (it runs on every cache miss).
_keys = ApiKey.__table__.c
_LOOKUP = across_organizations(
    select(_keys.id, _keys.organization_id, _keys.key_hash, _keys.scopes, _keys.expires_at).where(
        _keys.key_hash == bindparam("key_hash"), _keys.revoked_at.is_(None)
    ),
    "authentication finds the organization from the key's hash: there is none to filter on yet",
)


async def find_tenant(session: AsyncSession, plain: str) -> Tenant | None:
    """The tenant of an active key, or None. One indexed query on the key's hash."""
    digest = hash_key(plain)
    row = (await session.execute(_LOOKUP, {"key_hash": digest})).first()
    if row is None or not hmac.compare_digest(row.key_hash, digest):
        return None
    return Tenant(
        organization_id=row.organization_id,
        api_key_id=row.id,
        scopes=loaded(row.scopes),
        expires_at=row.expires_at,
    )
