"""Migrations: one chain that builds the schema on an empty database of either backend, agrees
with the models (no drift), and downgrades cleanly."""

from __future__ import annotations

import uuid

from sqlalchemy import inspect

from callplane.db import Database
from callplane.migrate import drift, upgrade
from callplane.models import metadata
from tests.conftest import BACKEND, POSTGRES_ADMIN_URL, _pg_admin, _pg_url


async def _fresh_url(tmp_path) -> tuple[str, str | None]:
    if BACKEND == "sqlite":
        return f"sqlite:///{tmp_path / 'fresh.db'}", None
    name = f"callplane_mig_{uuid.uuid4().hex[:12]}"
    await _pg_admin(f'CREATE DATABASE "{name}"')
    return _pg_url(name), name


async def test_upgrade_from_empty_matches_models_and_round_trips(tmp_path):
    assert POSTGRES_ADMIN_URL
    url, pg_name = await _fresh_url(tmp_path)
    db = Database(url, pool_size=1)
    try:
        await upgrade(db)
        assert await drift(db) == []
        async with db.engine.connect() as conn:
            tables = set(await conn.run_sync(lambda c: inspect(c).get_table_names()))
        assert {t.name for t in metadata.sorted_tables} <= tables

        await upgrade(db)  # idempotent: nothing pending
        await _downgrade(db, "base")
        async with db.engine.connect() as conn:
            left = set(await conn.run_sync(lambda c: inspect(c).get_table_names()))
        assert left <= {"alembic_version"}

        await upgrade(db)
        assert await drift(db) == []
    finally:
        await db.dispose()
        if pg_name:
            await _pg_admin(f'DROP DATABASE IF EXISTS "{pg_name}" WITH (FORCE)')


async def _downgrade(db: Database, revision: str) -> None:
    from alembic import command

    from callplane.migrate import alembic_config

    config = alembic_config()

    def run(connection) -> None:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)

    async with db.engine.begin() as conn:
        await conn.run_sync(run)
