"""``callplane serve | migrate | doctor | orgs | keys | load | demo | users | worker | audit |
retention``.

``--json`` outputs are a contract (README.md#command-line): exactly one JSON object on stdout.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.cli.agents import agents_app
from callplane.cli.audit import audit_app
from callplane.cli.common import fail, in_transaction, missing_database, print_json
from callplane.cli.doctor import doctor
from callplane.cli.retention import retention_app
from callplane.cli.sip import sip_app
from callplane.cli.users import users_app
from callplane.cli.voices import voices_app
from callplane.cli.worker import worker
from callplane.kit.db import Database
from callplane.migrate import upgrade
from callplane.settings import Settings

app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Plain help: paragraphs of a docstring are re-flowed to the terminal, never cut where the
    # source line ended.
    rich_markup_mode="markdown",
)
orgs_app = typer.Typer(help="Organizations.", no_args_is_help=True)
keys_app = typer.Typer(help="API keys.", no_args_is_help=True)
app.add_typer(orgs_app, name="orgs")
app.add_typer(agents_app, name="agents")
app.add_typer(keys_app, name="keys")
app.add_typer(users_app, name="users")
app.add_typer(sip_app, name="sip")
app.add_typer(voices_app, name="voices")
app.add_typer(audit_app, name="audit")
app.add_typer(retention_app, name="retention")
app.command()(worker)
app.command()(doctor)


def _version(value: bool) -> None:
    if value:
        from callplane import __version__

        typer.echo(f"callplane {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version"),
    ] = False,
) -> None:
    """callplane: places and answers phone calls with an LLM agent; serves its API and dashboard."""


def _check_port(host: str, port: int) -> None:
    """Fail before anything starts (no banner, no engine claiming calls) when the address is
    taken: one structured log line, exit 1."""
    import logging
    import socket

    from callplane.kit.logs import configure_logging

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            # As uvicorn binds: a port left in TIME_WAIT by a previous run is free.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        configure_logging(Settings().log_level)
        logging.getLogger("callplane").error(
            "cannot listen: the address is in use or not available",
            extra={"host": host, "port": port, "error": exc.strerror or str(exc)},
        )
        raise typer.Exit(1) from None


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes")] = 1,
) -> None:
    """Serve the API (applies pending migrations first)."""
    import uvicorn

    from callplane.cli.banner import banner, default_public_url
    from callplane.server import memory_limits_warning

    _check_port(host, port)
    migrate()
    found = _discover_brain()
    # Signed recording URLs must point at this server: unless CALLPLANE_PUBLIC_URL is set, it is
    # the address served. Set in the environment so every worker process builds the same URLs.
    if "public_url" not in Settings().model_fields_set:
        os.environ["CALLPLANE_PUBLIC_URL"] = default_public_url(host, port)
    typer.echo(banner(Settings(), host, port, discovered=found))
    warning = memory_limits_warning(Settings(), workers)
    if warning:
        typer.echo(warning, err=True)
    uvicorn.run(
        "callplane.app:create_app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        access_log=False,
        log_level="warning",
        loop="uvloop",
        http="callplane.server:JsonHttpToolsProtocol",
        proxy_headers=False,
    )


def _local_brain(settings: Settings) -> Settings | None:
    """Without a configured brain, the settings with one running on this machine (Ollama,
    llama.cpp's server, LM Studio); None when there is a brain already, or none to be found."""
    from callplane.brain.discovery import discover

    if settings.llm_base_url or not settings.llm_ports:
        return None
    found = discover(settings.llm_ports)
    if found is None:
        return None
    return settings.model_copy(
        update={"llm_base_url": found.base_url, "llm_model": settings.llm_model or found.model}
    )


def _discover_brain() -> bool:
    """The brain found on this machine, set in the environment so every worker process uses it."""
    found = _local_brain(Settings())
    if found is None:
        return False
    os.environ["CALLPLANE_LLM_BASE_URL"] = found.llm_base_url or ""
    os.environ["CALLPLANE_LLM_MODEL"] = found.llm_model or ""
    return True


@app.command()
def migrate() -> None:
    """Apply database migrations."""
    settings = Settings()

    async def _run() -> None:
        db = Database(settings.database_url, pool_size=1)
        try:
            await upgrade(db)
        finally:
            await db.dispose()

    asyncio.run(_run())


@orgs_app.command("list")
def orgs_list(as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False) -> None:
    """List the organizations (ids, names, when created)."""
    from sqlalchemy import select

    from callplane.models.orgs import Organization

    async def work(session: AsyncSession, _settings: Settings) -> list[dict[str, Any]]:
        rows = await session.scalars(select(Organization).order_by(Organization.id))
        return [{"id": o.id, "name": o.name, "created_at": o.created_at.isoformat()} for o in rows]

    orgs = in_transaction(work)
    if as_json:
        print_json({"organizations": orgs})
        return
    for o in orgs:
        typer.echo(f"{o['id']}\t{o['created_at']}\t{o['name']}")


@orgs_app.command("create")
def orgs_create(
    name: str, as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False
) -> None:
    """Create an organization and its first API key."""
    from callplane.orgs.service import create_organization, issue_key

    async def work(session: AsyncSession, _settings: Settings) -> dict[str, Any]:
        org = await create_organization(session, name)
        key = await issue_key(session, org.id)
        return {"id": org.id, "name": org.name, "api_key": key.api_key, "key_id": key.id}

    result = in_transaction(work)
    if as_json:
        print_json(result)
    else:
        typer.echo(
            f"organization {result['id']} ({result['name']})\n"
            f"API key {result['key_id']}: {result['api_key']}"
        )


@keys_app.command("create")
def keys_create(
    org: Annotated[int, typer.Option("--org", help="Organization id")],
    name: Annotated[str, typer.Option(help="A name for the key")] = "default",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
) -> None:
    """Create another API key for an organization."""
    from callplane.orgs.service import issue_key

    async def work(session: AsyncSession, _settings: Settings) -> dict[str, Any]:
        key = await issue_key(session, org, name=name)
        return {"id": key.id, "api_key": key.api_key}

    result = in_transaction(work)
    if as_json:
        print_json(result)
    else:
        typer.echo(f"key {result['id']}: {result['api_key']}")


@keys_app.command("list")
def keys_list(
    org: Annotated[int, typer.Option("--org", help="Organization id")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
) -> None:
    """List an organization's API keys (ids, names, whether revoked; never the keys)."""
    from callplane.orgs.service import get_organization, list_keys

    async def work(session: AsyncSession, _settings: Settings) -> list[dict[str, Any]]:
        await get_organization(session, org)
        return [
            {
                "id": k.id,
                "name": k.name,
                "created_at": k.created_at.isoformat(),
                "revoked": k.revoked_at is not None,
            }
            for k in await list_keys(session, org)
        ]

    keys = in_transaction(work)
    if as_json:
        print_json({"keys": keys})
        return
    for k in keys:
        state = "revoked" if k["revoked"] else "active"
        typer.echo(f"{k['id']}\t{state}\t{k['created_at']}\t{k['name'] or ''}")


@keys_app.command("revoke")
def keys_revoke(key_id: int) -> None:
    """Revoke an API key (401 from then on, on every process within a second)."""
    from callplane.orgs.service import revoke_key

    async def work(session: AsyncSession, _settings: Settings) -> None:
        await revoke_key(session, key_id)

    in_transaction(work)
    typer.echo(f"key {key_id} revoked")


@app.command()
def load(
    file: Annotated[Path, typer.Argument(help="Fixture document (JSON); - for stdin")],
    org: Annotated[int, typer.Option("--org", help="Organization id")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
) -> None:
    """Import a fixture document in one transaction (README: "The fixture document")."""
    from callplane.loader import load_document
    from callplane.orgs.service import get_organization

    if why := missing_database(Settings().database_url):
        fail(why)  # before reading a document that could not go anywhere
    try:
        raw = sys.stdin.buffer.read() if str(file) == "-" else file.read_bytes()
    except OSError as exc:
        fail(f"cannot read {file}: {exc.strerror or exc}")
    # A large document is millions of objects, and loading it makes millions more (validated
    # items, rows), none in a reference cycle: collections would only rescan them (a fifth of a
    # 300,000-call load's time). The collector stays off for this one-shot command.
    gc.disable()
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        fail(f"{file} is not valid JSON: {exc}")
    del raw

    async def work(session: AsyncSession, settings: Settings) -> dict[str, list[Any]]:
        await get_organization(session, org)
        return await load_document(session, settings, org, document)

    created = in_transaction(work)
    if as_json:
        print_json(created)
    else:
        for section, ids in created.items():
            typer.echo(f"{section}: {len(ids)} created")


@app.command()
def demo(
    org: Annotated[
        int | None,
        typer.Option("--org", help="Load the sample data into this existing organization instead"),
    ] = None,
    host: Annotated[str, typer.Option(help="The interface `serve` binds (for the address)")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="The port `serve` binds (for the address)")] = 8000,
) -> None:
    """Create the demo organization, sample data and dashboard person (once); print the sign-in
    and the API key."""
    from callplane.cli.banner import brain, default_public_url
    from callplane.demo import ensure_demo, load_demo_into
    from callplane.users.demo import DemoPerson, ensure_demo_person

    if org is not None:

        async def into(session: AsyncSession, settings: Settings) -> dict[str, list[Any]]:
            return await load_demo_into(session, settings, org)

        for section, ids in in_transaction(into, create=True).items():
            typer.echo(f"{section}: {len(ids)} created")
        return

    async def work(session: AsyncSession, settings: Settings) -> tuple[int, str | None, DemoPerson]:
        org_id, key = await ensure_demo(session, settings)
        return org_id, key, await ensure_demo_person(session, settings, org_id)

    org_id, key, person = in_transaction(work, create=True)
    password = person.password or "(changed since it was created: not shown, not reset)"
    settings = Settings()
    # The address `serve --host --port` will answer on, unless CALLPLANE_PUBLIC_URL names another
    # (a proxy in front): the same rule `serve` follows for the URLs it signs.
    served = (
        settings.public_url
        if "public_url" in settings.model_fields_set
        else default_public_url(host, port)
    )
    typer.echo(
        f"Dashboard: {served}/dashboard/ (once `callplane serve` runs there)\n"
        f"  email:    {person.email}\n  password: {password}"
    )
    # The brain `serve` will use, looked for as `serve` looks: a newcomer learns here, before
    # the first call, whether the agent will converse or only greet.
    found = _local_brain(settings)
    where = " (found running on this machine: `callplane serve` uses it)" if found else ""
    typer.echo(f"Brain: {brain(found or settings)}{where}")
    if key is None:
        typer.echo(
            f"Demo organization {org_id}. Its demo API key was revoked and stays revoked; "
            f"make another with: callplane keys create --org {org_id}"
        )
        return
    typer.echo(f"Demo organization {org_id}. API key:\n{key}")


def main() -> None:
    app()
