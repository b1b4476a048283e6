"""Secrets of one deployment, shared by all of its processes through the database."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.kit.db import dialect_insert
from callplane.models.orgs import AppSetting
from callplane.settings import Settings

_SIGNING_KEY = "signing_key"


async def signing_key(session: AsyncSession, settings: Settings) -> bytes:
    """CALLPLANE_SIGNING_KEY, or a key generated once and stored (first writer wins)."""
    if settings.signing_key:
        return settings.signing_key.encode()
    stmt = (
        dialect_insert(session, AppSetting.__table__)
        .values(key=_SIGNING_KEY, value=secrets.token_urlsafe(48))
        .on_conflict_do_nothing(index_elements=["key"])
    )
    await session.execute(stmt)
    value = await session.scalar(select(AppSetting.value).where(AppSetting.key == _SIGNING_KEY))
    assert value is not None
    return value.encode()


def derive_secret(key: bytes, label: str, length: int = 32) -> str:
    """A url-safe secret derived from the deployment key for one purpose (``label``)."""
    digest = hmac.new(key, label.encode(), hashlib.sha256).digest()[:length]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
