"""What a bulk import of calls refers to stays there, though on PostgreSQL its rows may go in
without the per-row foreign-key triggers (``BulkInsert.foreign_keys_checked_by_caller``).

The loader then holds the rows it refers to as each trigger would have: the organization and the
linked tags are locked ``FOR KEY SHARE`` until the import ends, and the triggers are back on for
whatever the transaction does next. A role that may not turn them off imports the same, with them.
"""

from __future__ import annotations

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError

from callplane.loader import load_document
from tests.conftest import BACKEND, _pg_admin
from tests.factories import load, make_org, runtime_of

pytestmark = pytest.mark.skipif(BACKEND != "postgresql", reason="PostgreSQL's triggers and locks")

TAG = "3c2b1a09-8f7e-4d6c-9b5a-4f3e2d1c0b0a"
CALL = "11111111-2222-4333-8444-555555555555"
DOCUMENT = {
    "call_tags": [{"id": TAG, "name": "vip"}],
    "calls": [{"id": CALL, "tags": [TAG], "params": {"order": "A-1"}}],
}


def _driver_url(url: str, user: str = "postgres") -> str:
    return make_url(url).set(drivername="postgresql", username=user).render_as_string(False)


async def test_what_the_import_refers_to_cannot_be_deleted_until_it_ends(app, database_url):
    org = await make_org(app)
    runtime = runtime_of(app)
    await load(app, org, {"call_tags": DOCUMENT["call_tags"]})
    other = await asyncpg.connect(_driver_url(database_url))
    try:
        await other.execute("SET lock_timeout = '200ms'")
        async with runtime.db.session(write=True) as session:
            await load_document(session, runtime.settings, org.id, {"calls": DOCUMENT["calls"]})
            with pytest.raises(asyncpg.LockNotAvailableError):
                await other.execute("DELETE FROM call_tags WHERE id = $1", TAG)
            with pytest.raises(asyncpg.LockNotAvailableError):
                await other.execute("DELETE FROM organizations WHERE id = $1", org.id)
            await session.commit()
        # Once it has ended, a delete takes the imported rows with it, as the keys say.
        await other.execute("DELETE FROM call_tags WHERE id = $1", TAG)
        assert await other.fetchval("SELECT count(*) FROM call_tag_links") == 0
    finally:
        await other.close()


async def test_the_triggers_are_back_for_the_rest_of_the_transaction(app):
    org = await make_org(app)
    runtime = runtime_of(app)
    async with runtime.db.session(write=True) as session:
        await load_document(session, runtime.settings, org.id, DOCUMENT)
        role = await session.scalar(text("SELECT current_setting('session_replication_role')"))
        assert role == "origin"
        orphan = text(
            "INSERT INTO call_attributes VALUES (:org, gen_random_uuid(), 'param', '\\x01', "
            "'\\x02', now())"
        )
        with pytest.raises(IntegrityError):
            await session.execute(orphan, {"org": org.id})


@pytest.fixture
async def plain_role_url(database_url):
    """The test database as a role that is no superuser and was granted no SET privilege."""
    name = "callplane_plain_role"
    database = make_url(database_url).database
    await _pg_admin(
        f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{name}') "
        f"THEN CREATE ROLE {name} LOGIN; END IF; END $$"
    )
    owner = await asyncpg.connect(_driver_url(database_url))
    try:
        await owner.execute(
            f'GRANT ALL ON DATABASE "{database}" TO {name}; '
            f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {name}; "
            f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {name}"
        )
        assert not await owner.fetchval("SELECT rolsuper FROM pg_roles WHERE rolname = $1", name)
    finally:
        await owner.close()
    return make_url(database_url).set(username=name).render_as_string(False)


async def test_a_role_that_may_not_turn_the_triggers_off_imports_the_same(
    make_app, plain_role_url, monkeypatch
):
    from callplane.calls import fixtures

    monkeypatch.setattr(fixtures, "CHUNK", 1)  # several chunks, through the worker process
    monkeypatch.setattr(fixtures, "IN_WORKER_FROM", 1)
    app = await make_app(database_url=plain_role_url)
    org = await make_org(app)
    calls = [{"tags": [TAG], "params": {"n": n}} for n in range(3)]
    created = await load(app, org, {**DOCUMENT, "calls": calls})
    runtime = runtime_of(app)
    async with runtime.db.session(write=False) as session:
        links = await session.scalar(text("SELECT count(*) FROM call_tag_links"))
        entries = await session.scalar(text("SELECT count(*) FROM call_attributes"))
    assert (len(created["calls"]), links, entries) == (3, 3, 3)


async def _role_inside_the_bulk_insert(app) -> str:
    from callplane.kit.bulk import BulkInsert

    runtime = runtime_of(app)
    async with runtime.db.session(write=True) as session:
        async with BulkInsert.of(session) as bulk, bulk.foreign_keys_checked_by_caller():
            role: str = await bulk.driver.fetchval(
                "SELECT current_setting('session_replication_role')"
            )
        return role


async def test_the_triggers_are_off_inside_the_bulk_insert_where_the_role_may(
    app, make_app, plain_role_url
):
    assert await _role_inside_the_bulk_insert(app) == "replica"
    assert await _role_inside_the_bulk_insert(await make_app(database_url=plain_role_url)) == (
        "origin"
    )
