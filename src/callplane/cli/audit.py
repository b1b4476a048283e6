"""``callplane audit verify [--org ID] [--json]``: recompute the audit log's hash chains."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.settings import Settings

audit_app = typer.Typer(help="The audit log.", no_args_is_help=True)


@audit_app.command("verify")
def audit_verify(
    org: Annotated[int | None, typer.Option("--org", help="Only this organization")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
) -> None:
    """Seal what was written since the last seal, then recompute every event's hash from the
    one before; name the first event that does not fit (changed, deleted or inserted) and
    exit 1, or say how many events check out."""
    from callplane.audit.verify import seal_all, verify
    from callplane.cli.common import in_transaction, print_json

    async def work(session: AsyncSession, _settings: Settings) -> dict[str, Any]:
        await seal_all(session, org)
        result = await verify(session, org)
        broken = result.first_break
        return {
            "ok": broken is None,
            "organizations": result.organizations,
            "events": result.events,
            "first_break": None
            if broken is None
            else {
                "organization_id": broken.organization_id,
                "event_id": broken.seq,
                "reason": broken.describe(),
            },
        }

    result = in_transaction(work)
    if as_json:
        print_json(result)
    elif result["ok"]:
        typer.echo(f"ok: {result['events']} events in {result['organizations']} organizations fit")
    else:
        typer.echo(f"tampered: {result['first_break']['reason']}", err=True)
    if not result["ok"]:
        raise typer.Exit(1)
