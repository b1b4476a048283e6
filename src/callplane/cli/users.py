"""``callplane users create --org ID EMAIL [--role ROLE] [--json] [--password-stdin]``."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.settings import Settings

users_app = typer.Typer(help="People who sign in to the dashboard.", no_args_is_help=True)


@users_app.command("create")
def users_create(
    email: str,
    org: Annotated[int, typer.Option("--org", help="Organization id")],
    role: Annotated[
        str | None,
        typer.Option(
            "--role",
            help="owner, admin, member or viewer (default: owner for the organization's first "
            "person, member after)",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
    password_stdin: Annotated[
        bool,
        typer.Option(
            "--password-stdin", help="Read the password from stdin instead of generating one"
        ),
    ] = False,
) -> None:
    """Create a person who signs in to the dashboard; prints their one-time password."""
    from callplane.cli.common import in_transaction, print_json
    from callplane.users.passwords import generate_password
    from callplane.users.service import create_user

    password = sys.stdin.readline().rstrip("\r\n") if password_stdin else generate_password()

    async def work(session: AsyncSession, _settings: Settings) -> dict[str, Any]:
        person = await create_user(session, org, email, password, role)
        return {"id": person.id, "email": person.email, "password": password, "role": person.role}

    result = in_transaction(work)
    role_given = result.pop("role")
    if as_json:
        print_json(result)  # exactly these three keys: a contract of the command
    else:
        typer.echo(
            f"person {result['id']} ({result['email']}, {role_given}) in organization {org}\n"
            f"password: {result['password']}"
        )
