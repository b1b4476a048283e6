"""``callplane doctor``: every part a deployment needs, each OK or the line that fixes it.

Each check is independent and bounded in time, so one broken part never hides the others; the
command exits 1 when any part needs fixing.
"""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx
import typer
from sqlalchemy import text

from callplane.brain.discovery import TOOL_CHECK_SECONDS
from callplane.cli import banner
from callplane.cli.banner import without_password
from callplane.cli.common import missing_database, sqlite_file
from callplane.settings import Settings
from callplane.speech.turn_model import TurnModelMissing, installed_model_path

_TIMEOUT = 5.0


@dataclass
class Finding:
    part: str
    ok: bool
    detail: str


async def _database(settings: Settings) -> Finding:
    from callplane.kit.db import Database

    if why := missing_database(settings.database_url):
        return Finding("database", False, why)  # connecting would create an empty one
    path = sqlite_file(settings.database_url)
    shown = f"sqlite:///{path}" if path else without_password(settings.database_url)
    try:
        db = Database(settings.database_url, pool_size=1)
    except Exception as exc:
        return Finding("database", False, f"fix CALLPLANE_DATABASE_URL ({exc})")
    try:
        async with db.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
            try:
                orgs = (await conn.execute(text("SELECT count(*) FROM organizations"))).scalar()
            except Exception:
                return Finding("database", False, f"{shown}: not migrated; run callplane migrate")
    except Exception as exc:
        line = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        return Finding(
            "database", False, f"{shown}: {line}; check CALLPLANE_DATABASE_URL and the server"
        )
    finally:
        await db.dispose()
    return Finding("database", True, f"{shown} ({orgs} organization{'' if orgs == 1 else 's'})")


async def _storage(settings: Settings) -> Finding:
    from callplane.media.storage import LocalStorage, storage_from_settings

    shown = settings.storage_url
    try:
        storage = storage_from_settings(settings)
        if isinstance(storage, LocalStorage):
            shown = str(storage.root)
        key = f"doctor/{uuid.uuid4()}"
        await storage.put(key, b"ok", "text/plain")
        await storage.delete(key)
    except Exception as exc:
        return Finding(
            "storage", False, f"{shown}: {exc}; make it writable or fix CALLPLANE_STORAGE_URL"
        )
    return Finding("storage", True, f"{shown} (writable)")


async def _speech_model(settings: Settings) -> Finding:
    from callplane.external_calls.transcription import speech_available
    from callplane.speech.models import AUTO, model_dir, model_installed

    missing = speech_available(settings)
    if missing is not None:
        return Finding("speech model", False, missing)
    english = settings.whisper_model_dir or "bundled Whisper tiny.en"
    # The multilingual model hears every other language (and ``auto``, and uploads).
    others = model_dir(settings, AUTO) or english
    if not model_installed(settings, AUTO):
        return Finding(
            "speech model",
            False,
            f"{english}; no model.bin in {others}: calls in other languages are not "
            "understood; `make install` assembles it (docs/languages.md)",
        )
    if others == english:
        return Finding("speech model", True, english)
    return Finding("speech model", True, f"{english}; other languages: {others}")


async def _espeak(_settings: Settings) -> Finding:
    found = shutil.which("espeak-ng")
    if found is None:
        return Finding(
            "espeak-ng",
            False,
            "not installed: `sudo apt-get install espeak-ng` (Debian); without it calls are "
            "text-only (the simulated network works, audio calls are silent)",
        )
    return Finding("espeak-ng", True, found)


async def _piper(_settings: Settings) -> Finding:
    if importlib.util.find_spec("piper") is None:
        return Finding("Piper voices", True, "not installed (espeak-ng speaks instead)")
    return Finding("Piper voices", True, "installed")


async def _voice(settings: Settings) -> Finding:
    """Which voice calls actually speak with: the configured one, or espeak-ng in its place."""
    return Finding("voice", True, f"calls speak with {banner.voice(settings)}")


async def _turn_model(settings: Settings) -> Finding:
    try:
        path = installed_model_path()
    except TurnModelMissing as exc:
        return Finding(
            "end-of-turn model", True, f"{exc}; CALLPLANE_ENDPOINTING=model decides as smart"
        )
    if settings.endpointing == "model":
        return Finding("end-of-turn model", True, f"in use: {path}")
    return Finding(
        "end-of-turn model",
        True,
        f"installed, not in use (CALLPLANE_ENDPOINTING={settings.endpointing}): {path}",
    )


async def _sip(settings: Settings) -> Finding:
    if settings.telephony != "sip":
        return Finding("SIP listener", True, "not used (CALLPLANE_TELEPHONY=simulated)")
    host, _, port = settings.sip_listen.rpartition(":")
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind((host or "0.0.0.0", int(port)))  # noqa: S104 - only a probe
    except (OSError, ValueError) as exc:
        return Finding(
            "SIP listener",
            False,
            f"cannot listen on {settings.sip_listen} ({exc}): stop what holds it or set "
            "CALLPLANE_SIP_LISTEN",
        )
    return Finding("SIP listener", True, f"{settings.sip_listen} is free")


async def _llm(settings: Settings) -> Finding:
    from callplane.brain.discovery import calls_tools, discover

    base_url, model, where = settings.llm_base_url, settings.llm_model, ""
    if not base_url:
        found = await asyncio.to_thread(discover, settings.llm_ports)
        if found is None:
            ports = ", ".join(str(p) for p in settings.llm_ports) or "none"
            return Finding(
                "LLM",
                True,
                f"none configured or running here (ports {ports}): agents say first_message "
                'and listen; README "Give the agent a brain"',
            )
        base_url, model = found.base_url, model or found.model
        where = ", found running on this machine: serve uses it"
    headers = {"Authorization": f"Bearer {settings.llm_api_key}"} if settings.llm_api_key else {}
    url = base_url.rstrip("/") + "/models"
    try:
        async with httpx.AsyncClient(timeout=_TIMEOUT, trust_env=False) as client:
            response = await client.get(url, headers=headers)
    except httpx.HTTPError as exc:
        return Finding(
            "LLM",
            False,
            f"{base_url} unreachable ({type(exc).__name__}): start the server or "
            "fix CALLPLANE_LLM_BASE_URL",
        )
    if response.status_code in (401, 403):
        return Finding("LLM", False, f"{url} refused the key: set CALLPLANE_LLM_API_KEY")
    if response.status_code >= 500:
        return Finding("LLM", False, f"{url} answered HTTP {response.status_code}")
    works, said = await calls_tools(base_url, model, settings.llm_api_key)
    return Finding("LLM", works, f"{base_url} ({model or 'no model set'}{where}): {said}")


CHECKS: list[Callable[[Settings], Awaitable[Finding]]] = [
    _database,
    _storage,
    _speech_model,
    _espeak,
    _piper,
    _voice,
    _turn_model,
    _sip,
    _llm,
]


async def examine(settings: Settings) -> list[Finding]:
    async def bounded(check: Callable[[Settings], Awaitable[Finding]]) -> Finding:
        # The brain's one real request may load a model from disk first.
        limit = TOOL_CHECK_SECONDS + _TIMEOUT if check is _llm else _TIMEOUT * 2
        try:
            return await asyncio.wait_for(check(settings), limit)
        except TimeoutError:
            name = check.__name__.strip("_").replace("_", " ")
            return Finding(name, False, f"no answer within {limit:g} s")

    return [await bounded(check) for check in CHECKS]


def doctor() -> None:
    """Check every part callplane uses; print OK or how to fix it (exit 1 if any needs fixing)."""
    findings = asyncio.run(examine(Settings()))
    width = max(len(f.part) for f in findings)
    for finding in findings:
        status = "OK " if finding.ok else "FIX"
        typer.echo(f"{finding.part.ljust(width)}  {status}  {finding.detail}")
    if not all(f.ok for f in findings):
        raise typer.Exit(1)
