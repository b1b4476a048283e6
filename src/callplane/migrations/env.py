"""Alembic environment. Runs on a connection handed in by ``callplane.migrate`` (the usual path) or
opens one from CALLPLANE_DATABASE_URL when Alembic's own CLI is used."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import sqlalchemy as sa
from alembic import context
from alembic.autogenerate.api import AutogenContext
from sqlalchemy import text
from sqlalchemy.engine import Connection

from callplane.models import include_name, metadata
from callplane.models.base import UTCDateTime

# An arbitrary constant: concurrent `callplane migrate` runs on PostgreSQL wait for each other.
_PG_MIGRATION_LOCK = 0x63616C6C


def render_item(type_: str, obj: Any, autogen_context: AutogenContext) -> str | Literal[False]:
    """Render the project's column types by their portable definitions in generated migrations."""
    if type_ != "type":
        return False
    if isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    if isinstance(obj, sa.JSON) and getattr(obj, "_variant_mapping", None):
        autogen_context.imports.add("from callplane.models.base import JSONType")
        return "JSONType"
    return False


def run_on(connection: Connection) -> None:
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
    context.configure(
        connection=connection,
        target_metadata=metadata,
        include_name=include_name,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        render_item=render_item,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        run_on(connection)
        return
    from callplane.kit.db import Database
    from callplane.settings import Settings

    async def _run() -> None:
        db = Database(Settings().database_url)
        async with db.engine.begin() as conn:
            await conn.run_sync(run_on)
        await db.dispose()

    asyncio.run(_run())


run_online()
