"""Test harness: the real app over a real database, a fresh one for every test.

Backend: CALLPLANE_TEST_DATABASE=sqlite (default) or postgresql.
- SQLite: the schema is migrated once into a template file, copied for every test.
- PostgreSQL: one database per test session (CREATE DATABASE with a random name on the server
  named by CALLPLANE_TEST_POSTGRES_URL, dropped at the end), migrated once, its tables
  truncated (and run-time custom-data tables dropped) before every test.

Tests talk HTTP to ``create_app(settings)`` through httpx; setup goes through the same services
the CLI uses (``tests/factories.py``), with real API keys.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from callplane.app import create_app
from callplane.kit.db import Database
from callplane.migrate import upgrade
from callplane.models import metadata
from callplane.models.base import USER_TABLE_PREFIX
from callplane.settings import Settings
from tests import tenancy_check

BACKEND = os.environ.get("CALLPLANE_TEST_DATABASE", "sqlite")
POSTGRES_ADMIN_URL = os.environ.get(
    "CALLPLANE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("CALLPLANE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


# Every statement of every test goes through the tenancy check (tests/tenancy_check.py).
tenancy_check.install()


def _reaches_a_database(item: pytest.Item) -> bool:
    """Whether a test can answer differently on PostgreSQL: it takes a database from the
    harness, or picks its backend itself (a module reading BACKEND or creating databases)."""
    module = getattr(item, "module", None)
    return (
        "database_template" in getattr(item, "fixturenames", ())
        or item.get_closest_marker("postgres") is not None
        or any(hasattr(module, name) for name in ("BACKEND", "_pg_admin", "_pg_url"))
    )


def _in_real_time(item: pytest.Item) -> bool:
    """Whether a test plays or hears audio as it happens: marked ``realtime``, or its module
    runs SIPp (``requires_sipp``) or a WebRTC peer (``tests/web_call_peer.py``) and it is not
    marked ``no_audio`` (a peer that never connects sends nothing: such a test need not wait for
    the other run's audio, and may sleep beside it)."""
    module = getattr(item, "module", None)
    if item.get_closest_marker("realtime") is not None:
        return True
    if module is None or item.get_closest_marker("no_audio") is not None:
        return False
    return hasattr(module, "requires_sipp") or any(
        getattr(value, "__module__", None) == "tests.web_call_peer"
        for value in vars(module).values()
    )


#: Set by scripts/test.sh when the two databases' runs go side by side: a file both lock.
REALTIME_LOCK = os.environ.get("CALLPLANE_TEST_REALTIME_LOCK")
#: Seconds each realtime test of this run waited for the other run's, for the run's summary.
_realtime_waits: list[float] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The PostgreSQL run leaves out what touches no database (speech, SIP parsing, the turn
    loop's fakes, docs): the SQLite run has already run it, and it cannot differ here. A test
    that wants both runs takes a database (or reads BACKEND). Side by side, the two runs play
    their audio at opposite ends."""
    for item in items:
        if _in_real_time(item) and item.get_closest_marker("realtime") is None:
            item.add_marker("realtime")
    if BACKEND == "postgresql" and not os.environ.get("CALLPLANE_TEST_EVERYTHING"):
        kept, left_out = [], []
        for item in items:
            (kept if _reaches_a_database(item) else left_out).append(item)
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = kept
    if REALTIME_LOCK:
        _take_realtime_turns_apart(items)


def _take_realtime_turns_apart(items: list[pytest.Item]) -> None:
    """With the two runs side by side, the PostgreSQL run plays its audio first and the SQLite
    run last, so each run's realtime tests go while the other runs ordinary ones instead of
    both queueing at the lock. Whole modules move, in their own order, so a module's fixtures
    are still set up once."""
    with_audio = {item.path for item in items if item.get_closest_marker("realtime") is not None}
    audio_first = BACKEND == "postgresql"
    items.sort(key=lambda item: (item.path in with_audio) != audio_first)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _realtime_waits:
        terminalreporter.write_line(
            f"realtime tests: {len(_realtime_waits)}, waited {sum(_realtime_waits):.0f} s "
            "in all for the other run's"
        )


@pytest.fixture(autouse=True)
def one_realtime_test_at_a_time(request: pytest.FixtureRequest) -> Any:
    """With the two runs side by side, a ``realtime`` test waits until the other run is in none:
    audio paced by the wall clock then shares the two cores with one ordinary test at most, as
    it did when the runs went one after the other."""
    if not REALTIME_LOCK or request.node.get_closest_marker("realtime") is None:
        yield
        return
    import fcntl
    import time

    with open(REALTIME_LOCK, "a") as lock:
        asked = time.monotonic()
        fcntl.flock(lock, fcntl.LOCK_EX)
        _realtime_waits.append(time.monotonic() - asked)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(autouse=True, scope="session")
def cheap_password_hashes() -> Any:
    """Passwords hashed with argon2id at its lowest cost in this process. A hash carries its
    own parameters, so signing in checks it the same way; the production cost (~170 ms of CPU a
    hash, two a signed-in dashboard test) bought the suite nothing but minutes."""
    from argon2 import PasswordHasher

    from callplane.users import passwords

    production = passwords._hasher
    passwords._hasher = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    yield
    passwords._hasher = production


@pytest.fixture(autouse=True)
def tenancy_filtered() -> Any:
    """Fail the test when any statement it ran touched a tenant table without the filter."""
    tenancy_check.take_violations()
    yield
    violations = tenancy_check.take_violations()
    assert not violations, "statements without the organization filter:\n" + "\n".join(
        f"{tables}: {sql}" for sql, tables in violations
    )


def _pg_url(database: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(POSTGRES_ADMIN_URL).set(database=database).render_as_string(False)


async def _pg_admin(statement: str) -> None:
    import asyncpg

    from callplane.kit.db import async_url

    url = async_url(POSTGRES_ADMIN_URL).replace("postgresql+asyncpg", "postgresql")
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


async def _migrate(url: str) -> None:
    db = Database(url, pool_size=1)
    try:
        await upgrade(db)
    finally:
        await db.dispose()


@pytest.fixture(scope="session")
def database_template(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """SQLite: path of a migrated template file. PostgreSQL: URL of the session's database."""
    if BACKEND == "sqlite":
        path = tmp_path_factory.mktemp("db") / "template.db"
        asyncio.run(_migrate(f"sqlite:///{path}"))
        yield path
        return
    if BACKEND != "postgresql":
        raise pytest.UsageError(f"unknown CALLPLANE_TEST_DATABASE={BACKEND!r}")
    name = f"callplane_test_{uuid.uuid4().hex[:12]}"
    asyncio.run(_pg_admin(f'CREATE DATABASE "{name}"'))
    # A commit waits for no disk flush: what the tests see is the same (a crash would lose the
    # last commits, and a test database does not outlive a crash), and each commit is ~1-3 ms
    # shorter (more on a machine busy writing).
    asyncio.run(_pg_admin(f'ALTER DATABASE "{name}" SET synchronous_commit = off'))
    try:
        asyncio.run(_migrate(_pg_url(name)))
        yield _pg_url(name)
    finally:
        asyncio.run(_pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


_counter = iter(range(10**9))


def _free_bytes(path: Path) -> int:
    found = os.statvfs(path)
    return found.f_bavail * found.f_frsize


@pytest.fixture(scope="session")
def _sqlite_files(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Where the tests' SQLite files live: in memory-backed /dev/shm where there is one with
    room (a container's may have 64 MiB), so the checkpoint on closing a database is no disk
    flush. Each file is removed after its test."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK) and _free_bytes(shm) >= 2**30):
        yield tmp_path_factory.mktemp("sqlite")
        return
    root = Path(tempfile.mkdtemp(prefix="callplane-tests-", dir=shm))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def database_url(database_template: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh, migrated, empty database for this test."""
    if BACKEND == "sqlite":
        target = request.getfixturevalue("_sqlite_files") / f"test-{next(_counter)}.db"
        shutil.copyfile(database_template, target)
        yield f"sqlite:///{target}"
        for path in (target, Path(f"{target}-wal"), Path(f"{target}-shm")):
            path.unlink(missing_ok=True)
        return
    url: str = database_template
    asyncio.run(_reset_postgres(url))
    yield url


async def _reset_postgres(url: str) -> None:
    """Empty every table and restart every sequence. DELETE, not TRUNCATE: on tables this small
    a TRUNCATE (new files for each table) cost ~170 ms a test, a DELETE script a few ms."""
    import asyncpg

    from callplane.kit.db import async_url

    conn = await asyncpg.connect(async_url(url).replace("postgresql+asyncpg", "postgresql"))
    try:
        user_tables = await conn.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
            "AND tablename LIKE $1",
            USER_TABLE_PREFIX + "%",
        )
        await conn.execute(
            ";".join(f'DROP TABLE IF EXISTS "{row[0]}" CASCADE' for row in user_tables)
            or "SELECT 1"
        )
        sequences = await conn.fetch(
            "SELECT sequencename FROM pg_sequences WHERE schemaname = current_schema()"
        )
        # Names come from our own metadata and the server's catalog, never from a test's input.
        tables = reversed(metadata.sorted_tables)
        script = [f'DELETE FROM "{table.name}"' for table in tables]  # noqa: S608
        script += [f'ALTER SEQUENCE "{row[0]}" RESTART' for row in sequences]
        await conn.execute(";".join(script))
    finally:
        await conn.close()


def make_settings(database_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "log_level": "warning",
        "signing_key": "test-signing-key",
        # Apps of most tests keep their calls enqueued; engine tests turn the engine on.
        "worker": "off",
        # A background purge at a random moment would race tests that count what a purge
        # clears; the tests of the loop itself turn it on.
        "contact_purge_interval_seconds": 0,
        # espeak-ng, not the default Piper voice: each Piper process costs a second to start and
        # ~215 MB, in every app of every test; the Piper tests and the first-run test ask for it.
        "voice_engine": "espeak-ng:en-us",
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


AppFactory = Callable[..., Any]


@pytest.fixture
async def make_app(database_url: str, tmp_path: Path) -> AsyncIterator[AppFactory]:
    """Build apps with settings overrides: ``app = await make_app(rate_limit="3/minute")``.

    Apps built for one test share its database; each is started (lifespan) and stopped.
    """
    stacks: list[Any] = []

    async def factory(**overrides: Any) -> FastAPI:
        url = overrides.pop("database_url", database_url)
        # Apps of one test share its recording storage, as processes of a deployment do.
        overrides.setdefault("storage_url", f"file://{tmp_path / 'recordings'}")
        app = create_app(make_settings(url, **overrides))
        app.add_middleware(tenancy_check.CheckedScope)
        lifespan = app.router.lifespan_context(app)
        with tenancy_check.checked():  # background tasks started here inherit the check
            await lifespan.__aenter__()
        stacks.append(lifespan)
        return app

    yield factory
    for lifespan in reversed(stacks):
        await lifespan.__aexit__(None, None, None)


@pytest.fixture
async def app(make_app: AppFactory) -> FastAPI:
    application: FastAPI = await make_app()
    return application


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


def client_for(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")


@pytest.fixture
def redis_url() -> str:
    """A reachable Redis, or a skip (a failure under CI, where Redis must be there)."""
    import socket

    from sqlalchemy.engine import make_url

    parsed = make_url(REDIS_URL.replace("redis://", "redis+x://", 1))
    try:
        socket.create_connection((parsed.host or "127.0.0.1", parsed.port or 6379), 1).close()
    except OSError:
        if IN_CI:
            pytest.fail(f"Redis is required under CI but not reachable at {REDIS_URL}")
        pytest.skip(f"Redis not reachable at {REDIS_URL}")
    return REDIS_URL
