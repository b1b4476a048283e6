"""Secrets of one deployment, shared by all of its processes through the database.

The signing key is created when the database is migrated (``migrate.upgrade``, which ``serve``
and every command run first), so serving only ever reads it: a request or a call never has to
take SQLite's write lock for it, least of all while another transaction of the same process
holds that lock (which stalled the first call after a restart until the lock wait gave up).
Each process reads it once (``DeploymentKey``) and keeps it.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import secrets

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.kit.db import Database, dialect_insert
from callplane.models.orgs import AppSetting
from callplane.settings import Settings

_SIGNING_KEY = "signing_key"


def create_signing_key(connection: Connection) -> None:
    """Store a new signing key unless one exists (first writer wins); run at migration time."""
    insert = postgresql.insert if connection.dialect.name == "postgresql" else sqlite.insert
    connection.execute(
        insert(AppSetting)
        .values(key=_SIGNING_KEY, value=secrets.token_urlsafe(48))
        .on_conflict_do_nothing(index_elements=["key"])
    )


def stored_key(connection: Connection) -> bytes:
    """The stored key, read on a synchronous connection (migrations)."""
    value = connection.scalar(select(AppSetting.value).where(AppSetting.key == _SIGNING_KEY))
    assert value is not None, "no signing key stored"
    return str(value).encode()


async def signing_key(session: AsyncSession, settings: Settings) -> bytes:
    """CALLPLANE_SIGNING_KEY, or the stored key (created now only on a database migrated before
    keys were made at migration time; then ``session`` must be a write session)."""
    if settings.signing_key:
        return settings.signing_key.encode()
    stored = select(AppSetting.value).where(AppSetting.key == _SIGNING_KEY)
    value = await session.scalar(stored)
    if value is None:
        stmt = (
            dialect_insert(session, AppSetting.__table__)
            .values(key=_SIGNING_KEY, value=secrets.token_urlsafe(48))
            .on_conflict_do_nothing(index_elements=["key"])
        )
        await session.execute(stmt)
        value = await session.scalar(stored)
    assert value is not None
    return value.encode()


class DeploymentKey:
    """The deployment's key, read once per process and then served from memory.

    ``load`` is awaited by the app's start-up, before the engine runs, so no call or request ever
    waits for it. Reading is a read transaction: it never takes or waits for a write lock.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._key: bytes | None = None
        self._lock = asyncio.Lock()

    @property
    def cached(self) -> bytes | None:
        return self._key

    async def load(self, db: Database) -> bytes:
        if self._key is not None:
            return self._key
        async with self._lock:
            if self._key is None:
                key: bytes | None = None
                if self.settings.signing_key:
                    key = self.settings.signing_key.encode()
                else:
                    async with db.session(write=False) as session:
                        value = await session.scalar(
                            select(AppSetting.value).where(AppSetting.key == _SIGNING_KEY)
                        )
                    key = value.encode() if value is not None else None
                if key is None:  # a database not migrated by this version: make it, once
                    async with db.session(write=True) as session:
                        key = await signing_key(session, self.settings)
                        await session.commit()
                self._key = key
        return key if self._key is None else self._key


def derive_secret(key: bytes, label: str, length: int = 32) -> str:
    """A url-safe secret derived from the deployment key for one purpose (``label``)."""
    digest = hmac.new(key, label.encode(), hashlib.sha256).digest()[:length]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
