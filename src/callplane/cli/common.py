"""What every ``callplane`` command shares: one committed transaction, one way to fail, one way
to print JSON (DESIGN §2: ``--json`` prints exactly one object on stdout)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn, TypeVar

import orjson
import typer
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.errors import CallplaneError
from callplane.kit.db import Database
from callplane.migrate import upgrade
from callplane.settings import Settings

T = TypeVar("T")


def in_transaction(work: Callable[[AsyncSession, Settings], Awaitable[T]]) -> T:
    """Run ``work`` in one committed transaction; domain errors exit 1 with their message."""
    settings = Settings()

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
