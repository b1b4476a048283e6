"""Which Whisper model recognises a call: ``CALLPLANE_WHISPER_MODEL`` and the call's language.

``tiny.en`` (the default) keeps English on the small English-only model and sends every other
language, and ``auto``, to the multilingual ``base`` model; ``base`` sends everything to
``base``; a directory is one CTranslate2 Whisper model for every call. ``base`` is assembled
into the venv at install time by ``scripts/install_whisper_base.py`` (docs/languages.md).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from callplane.settings import Settings

TINY_EN = "tiny.en"
BASE = "base"
#: A call (or agent) language that asks the recogniser to tell the language turn by turn.
AUTO = "auto"


def installed_base_dir() -> Path:
    """Where the install put the multilingual base model (inside the venv, never in git)."""
    return Path(sys.prefix) / "share" / "callplane" / "whisper-base"


def primary(language: str | None) -> str | None:
    """``"es"`` of ``"es-MX"``; None for ``auto`` or no language."""
    if not language or language.casefold() == AUTO:
        return None
    return language.split("-")[0].casefold()


def is_english(language: str | None) -> bool:
    return primary(language) == "en"


def model_dir(settings: Settings, language: str | None) -> str | None:
    """The model directory for a call in ``language`` (None: the bundled tiny.en, or
    CALLPLANE_WHISPER_MODEL_DIR when set)."""
    choice = settings.whisper_model
    if choice == TINY_EN:
        return settings.whisper_model_dir if is_english(language) else str(installed_base_dir())
    if choice == BASE:
        return str(installed_base_dir())
    return choice


def model_installed(settings: Settings, language: str | None) -> bool:
    """Whether the model for a call in ``language`` is on this machine (the bundled tiny.en is
    checked where it is loaded: ``transcriber.bundled_model_dir``)."""
    directory = model_dir(settings, language)
    return directory is None or (Path(directory) / "model.bin").is_file()
