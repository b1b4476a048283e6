"""What every ``callplane`` command shares: one committed transaction, one way to fail, one way
to print JSON (README.md#command-line: ``--json`` prints exactly one object on stdout)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import orjson
import typer
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.errors import CallplaneError
from callplane.kit.db import Database
from callplane.migrate import upgrade
from callplane.settings import Settings

T = TypeVar("T")


def sqlite_file(database_url: str) -> Path | None:
    """The absolute path of a SQLite database file (None for PostgreSQL or an in-memory one):
    a relative path is relative to the directory the command runs in."""
    try:
        url = make_url(database_url)
    except ArgumentError:
        return None
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database).expanduser().resolve()


def missing_database(database_url: str) -> str | None:
    """Why the database cannot be used as it is, when it is a SQLite file that does not exist:
    opening it would create an empty one (from the wrong directory, most often)."""
    path = sqlite_file(database_url)
    if path is None or path.exists():
        return None
    return (
        f"no database at {path}: run `callplane migrate` (or `serve`) to create it, "
        "or point CALLPLANE_DATABASE_URL at the existing one"
    )


def in_transaction(
    work: Callable[[AsyncSession, Settings], Awaitable[T]], *, create: bool = False
) -> T:
    """Run ``work`` in one committed transaction; domain errors exit 1 with their message.
    Without ``create``, a SQLite database that does not exist is refused, not created."""
    settings = Settings()
    if not create and (why := missing_database(settings.database_url)):
        fail(why)

    async def _run() -> T:
        db = Database(settings.database_url, pool_size=1)
        try:
            await upgrade(db)
            async with db.session(write=True) as session:
                result = await work(session, settings)
                await session.commit()
                return result
        finally:
            await db.dispose()

    try:
        return asyncio.run(_run())
    except CallplaneError as exc:
        fail(exc.message)
    except (SQLAlchemyError, OSError) as exc:
        # One clear line, never a traceback: the database is unreachable or refused the work.
        fail(f"database: {first_line(exc)}")


def first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def print_json(value: Any) -> None:
    sys.stdout.write(orjson.dumps(value).decode() + "\n")
