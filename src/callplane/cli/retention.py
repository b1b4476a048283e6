"""``callplane retention run [--as-of TIMESTAMP] [--json]``: the retention job, once, now."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.settings import Settings

retention_app = typer.Typer(
    help="Retention of calls' recordings and transcripts.", no_args_is_help=True
)


def _moment(text: str | None) -> datetime | None:
    if text is None:
        return None
    from callplane.cli.common import fail

    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        fail(f"--as-of: not an ISO 8601 timestamp: {text!r}")
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@retention_app.command("run")
def retention_run(
    as_of: Annotated[
        str | None,
        typer.Option("--as-of", help="Run as if it were this moment (ISO 8601; default now)"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
) -> None:
    """Delete the recordings and transcript text of every call its agent's `retention_days`
    have expired (each deletion an audit event), as the worker does hourly."""
    from callplane.cli.common import in_transaction, print_json
    from callplane.engine.call_retention import BATCH, forget_expired
    from callplane.media.storage import storage_from_settings

    moment = _moment(as_of)

    async def work(session: AsyncSession, settings: Settings) -> dict[str, Any]:
        storage = storage_from_settings(settings)
        total = 0
        while True:
            done = await forget_expired(session, storage, moment, BATCH)
            total += done
            if done < BATCH:
                return {"calls": total}
            await session.commit()

    result = in_transaction(work)
    if as_json:
        print_json(result)
    else:
        typer.echo(f"{result['calls']} calls' recordings and transcripts deleted")
