"""What ``callplane serve`` says when it starts, and the address it hands out by default."""

from __future__ import annotations

import shutil

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from callplane.settings import Settings
from callplane.speech.engines import DEFAULT_ENGINE, spoken_default

# Binding every interface serves loopback too; a URL needs one concrete address to point at.
_ANY_ADDRESS = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "": "127.0.0.1"}


def default_public_url(host: str, port: int) -> str:
    """``http://host:port`` of the address served (CALLPLANE_PUBLIC_URL when it is not set)."""
    shown = _ANY_ADDRESS.get(host, host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


def without_password(database_url: str) -> str:
    """The banner may end up in shared logs: never print a database password."""
    try:
        return make_url(database_url).render_as_string(hide_password=True)
    except ArgumentError:  # unparsable: the database layer reports it, the banner stays quiet
        return database_url.split("@")[-1]


def banner(settings: Settings, host: str, port: int, *, discovered: bool = False) -> str:
    served = default_public_url(host, port)
    telephony = getattr(settings, "telephony", "simulated")
    found = " (found running on this machine)" if discovered else ""
    return (
        f"callplane serving {served} · database {without_password(settings.database_url)}"
        f" · storage {settings.storage_url} · telephony {telephony}"
        f" · brain {brain(settings)}{found}"
        f" · voice {voice(settings)}"
        f" · docs {served}/v1/docs · dashboard {served}/dashboard/"
    )


def voice(settings: Settings) -> str:
    """The voice calls speak with (CALLPLANE_VOICE_ENGINE, Piper's joe voice unless set), or why
    it is another: a voice not installed falls back to espeak-ng, and without espeak-ng calls
    are text only (it says how)."""
    if shutil.which("espeak-ng") is None and spoken_default(settings) == DEFAULT_ENGINE:
        return "none (espeak-ng is not installed: calls are text only; apt-get install espeak-ng)"
    if spoken_default(settings) == settings.voice_engine:
        return settings.voice_engine
    return f"espeak-ng ({settings.voice_engine} is not installed here)"


def brain(settings: Settings) -> str:
    """The LLM the agents use, or that there is none (they then say first_message and listen)."""
    if not settings.llm_base_url:
        return (
            "none (start Ollama, llama.cpp's server or LM Studio, or set "
            'CALLPLANE_LLM_BASE_URL, for conversations: README "Give the agent a brain")'
        )
    return f"{settings.llm_model or 'default model'} at {settings.llm_base_url}"
