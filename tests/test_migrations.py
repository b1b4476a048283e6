"""Migrations: one chain that builds the schema on an empty database of either backend, agrees
with the models (no drift), and downgrades cleanly."""

from __future__ import annotations

import uuid

from sqlalchemy import inspect

from callplane.kit.db import Database
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


async def test_old_sqlite_json_columns_become_text_and_keep_their_values(tmp_path):
    """0009: a custom-data JSON column declared JSON (NUMERIC affinity) turned 1.0 into 1."""
    import pytest
    from sqlalchemy import text

    from callplane.kit import jsonvalues

    if BACKEND != "sqlite":
        pytest.skip("PostgreSQL's JSONB columns keep numbers as written")
    db = Database(f"sqlite:///{tmp_path / 'old.db'}", pool_size=1)
    try:
        await upgrade(db)
        await _downgrade(db, "0008")
        async with db.engine.begin() as conn:
            for statement in [
                "CREATE TABLE udt_1 (\n\torganization_id INTEGER NOT NULL, \n\tid INTEGER NOT NULL,"
                " \n\tdoc JSON, \n\tname TEXT, \n\tPRIMARY KEY (id)\n)",
                "CREATE INDEX udt_1_ix0 ON udt_1 (organization_id, name, id)",
                "CREATE TABLE udt_2 (\n\tid INTEGER NOT NULL, \n\tparent INTEGER REFERENCES"
                " udt_1 (id), \n\tPRIMARY KEY (id)\n)",
                "INSERT INTO udt_1 VALUES (1, 1, '1.0', 'a'), (1, 2, '0.30000000000000004', 'b'),"
                " (1, 3, '{\"x\": 1.0}', 'c')",
                "INSERT INTO udt_2 VALUES (1, 1)",
            ]:
                await conn.execute(text(statement))
        await upgrade(db)
        async with db.engine.begin() as conn:
            schema = dict((await conn.execute(text("SELECT name, sql FROM sqlite_master"))).all())
            await conn.execute(text("INSERT INTO udt_1 VALUES (1, 4, '1.0', 'd')"))
            rows = dict((await conn.execute(text("SELECT id, doc FROM udt_1"))).all())
            checked = (await conn.execute(text("PRAGMA integrity_check"))).scalars().all()
            children = (await conn.execute(text("PRAGMA foreign_key_check"))).all()
        assert checked == ["ok"] and children == [], (checked, children)
        assert "doc TEXT" in schema["udt_1"] and "udt_1_ix0" in schema
        assert "REFERENCES udt_1" in schema["udt_2"]
        read = {k: jsonvalues.loads(v) for k, v in rows.items()}
        assert read[1] == 1  # already converted when it was written: kept as it reads
        assert read[2] == 0.30000000000000004
        assert read[3] == {"x": 1.0} and isinstance(read[3]["x"], float)
        assert read[4] == 1.0 and isinstance(read[4], float)  # written after: exact
    finally:
        await db.dispose()


async def test_0011_gives_every_agent_a_main_branch_with_a_first_commit(tmp_path):
    """Today's agents keep working: each gets ``main`` whose first commit is an empty config (the
    behaviour of an agent that was a name), a tools secret, and its numbers route to ``main``."""
    from datetime import UTC, datetime

    from sqlalchemy import text

    url, pg_name = await _fresh_url(tmp_path)
    db = Database(url, pool_size=1)
    try:
        await upgrade(db, "0009")
        async with db.engine.begin() as conn:
            now = datetime(2026, 1, 1, tzinfo=UTC)
            if BACKEND == "sqlite":
                now = now.replace(tzinfo=None)
            await conn.execute(
                text(
                    "INSERT INTO organizations (id, name, created_at, updated_at)"
                    " VALUES (1, 'A', :n, :n)"
                ),
                {"n": now},
            )
            for agent_id in (1, 2):
                await conn.execute(
                    text(
                        "INSERT INTO agents (id, organization_id, uuid, name, created_at,"
                        " updated_at) VALUES (:id, 1, :u, 'Front desk', :n, :n)"
                    ),
                    {"id": agent_id, "u": str(uuid.uuid4()), "n": now},
                )
            await conn.execute(
                text(
                    "INSERT INTO phone_numbers (organization_id, id, number, agent_id, created_at,"
                    " updated_at) VALUES (1, :id, '+14155550123', 1, :n, :n)"
                ),
                {"id": str(uuid.uuid4()), "n": now},
            )
        await upgrade(db)
        async with db.engine.begin() as conn:
            branches = (
                await conn.execute(
                    text("SELECT agent_id, name, head FROM agent_branches ORDER BY agent_id")
                )
            ).all()
            commits = (
                await conn.execute(
                    text(
                        "SELECT agent_id, id, branch, parents FROM agent_commits ORDER BY agent_id"
                    )
                )
            ).all()
            secrets = (await conn.execute(text("SELECT tools_secret, archived FROM agents"))).all()
            routed = (await conn.execute(text("SELECT agent_branch_name FROM phone_numbers"))).all()
        assert [(b[0], b[1]) for b in branches] == [(1, "main"), (2, "main")]
        assert [str(b[2]) for b in branches] == [str(c[1]) for c in commits]
        assert all(c[2] == "main" for c in commits)
        assert all(s[0].startswith("whsec_") and not s[1] for s in secrets)
        assert routed == [("main",)]
        assert await drift(db) == []
    finally:
        await db.dispose()
        if pg_name:
            await _pg_admin(f'DROP DATABASE IF EXISTS "{pg_name}" WITH (FORCE)')
