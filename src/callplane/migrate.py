"""Apply the Alembic migrations and check them against the models (CLI, server, tests)."""

from __future__ import annotations

import warnings
from importlib.resources import files

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy.engine import Connection

from callplane.deployment import create_signing_key
from callplane.kit.db import Database


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(files("callplane") / "migrations"))
    return config


async def upgrade(db: Database, revision: str = "head") -> None:
    config = alembic_config()

    def _upgrade(connection: Connection) -> None:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
        if revision == "head":
            # Serving only reads the key (callplane.deployment says why).
            create_signing_key(connection)

    async with db.engine.begin() as conn:
        await conn.run_sync(_upgrade)


async def drift(db: Database) -> list[object]:
    """Differences between the migrated schema and the models (empty when they agree)."""
    from callplane.models import include_name, metadata

    def _compare(connection: Connection) -> list[object]:
        context = MigrationContext.configure(
            connection,
            opts={"compare_type": True, "include_name": include_name},
        )
        with warnings.catch_warnings():
            # SQLite's reflection skips an index on an expression (the audit log's resource
            # index, migration 0030), and the comparison leaves it out on both sides.
            # (``tests/test_audit_log.py`` finds it in the query plans instead).
            warnings.filterwarnings("ignore", "Skipped unsupported reflection of expression")
            warnings.filterwarnings("ignore", "autogenerate skipping metadata-specified expression")
            return list(compare_metadata(context, metadata))

    async with db.engine.connect() as conn:
        return await conn.run_sync(_compare)
