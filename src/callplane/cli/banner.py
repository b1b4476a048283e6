"""What ``callplane serve`` says when it starts, and the address it hands out by default."""

from __future__ import annotations

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from callplane.settings import Settings

# Binding every interface serves loopback too; a URL needs one concrete address to point at.
_ANY_ADDRESS = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "": "127.0.0.1"}


def default_public_url(host: str, port: int) -> str:
    """``http://host:port`` of the address served (CALLPLANE_PUBLIC_URL when it is not set)."""
    shown = _ANY_ADDRESS.get(host, host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


def _without_password(database_url: str) -> str:
    """The banner may end up in shared logs: never print a database password."""
    try:
        return make_url(database_url).render_as_string(hide_password=True)
    except ArgumentError:  # unparsable: the database layer reports it, the banner stays quiet
        return database_url.split("@")[-1]


def banner(settings: Settings, host: str, port: int) -> str:
    served = default_public_url(host, port)
    telephony = getattr(settings, "telephony", "simulated")
    return (
        f"callplane serving {served} · database {_without_password(settings.database_url)}"
        f" · storage {settings.storage_url} · telephony {telephony} · docs {served}/v1/docs"
        f" · dashboard {served}/dashboard/"
    )
