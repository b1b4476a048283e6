"""Which Whisper model recognises a call: ``CALLPLANE_WHISPER_MODEL`` and the call's language.

``tiny.en`` (the default) keeps English on the small English-only model and sends every other
language, and ``auto``, to the multilingual ``base`` model; ``base`` sends everything to
``base``; a directory is one CTranslate2 Whisper model for every call. ``base`` is assembled
into the venv at install time by ``scripts/install_whisper_base.py`` (docs/languages.md).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Protocol


class RecognitionSettings(Protocol):
    """What the choice of model reads of the server's settings (speech stays below the
    settings module, which imports the speech engines)."""

    @property
    def whisper_model(self) -> str: ...
    @property
    def whisper_model_dir(self) -> str | None: ...


TINY_EN = "tiny.en"
BASE = "base"
#: A call (or agent) language that asks the recogniser to tell the language turn by turn.
AUTO = "auto"


#: The languages Whisper recognises (ISO 639-1, plus ``haw`` and ``yue``), as its tokenizer
#: names them: a language tag whose first part is not one of these is unknown here.
_WHISPER_CODES = (
    "af am ar as az ba be bg bn bo br bs ca cs cy da de el en es et eu fa fi fo fr gl gu ha haw "
    "he hi hr ht hu hy id is it ja jw ka kk km kn ko la lb ln lo lt lv mg mi mk ml mn mr ms mt "
    "my ne nl nn no oc pa pl ps pt ro ru sa sd si sk sl sn so sq sr su sv sw ta te tg th tk tl "
    "tr tt uk ur uz vi yi yo zh yue"
)
WHISPER_LANGUAGES = frozenset(_WHISPER_CODES.split())
#: English names of the languages callers are most often in, for what the brain is told (any
#: other language is named by its tag).
LANGUAGE_NAMES = {
    "ar": "Arabic", "de": "German", "en": "English", "es": "Spanish", "fr": "French",
    "hi": "Hindi", "it": "Italian", "ja": "Japanese", "ko": "Korean", "nl": "Dutch",
    "pl": "Polish", "pt": "Portuguese", "ru": "Russian", "tr": "Turkish", "uk": "Ukrainian",
    "vi": "Vietnamese", "zh": "Chinese",
}  # fmt: skip


def known_language(tag: str) -> bool:
    """Whether Whisper recognises the language of ``tag`` (``"es-MX"``: Spanish, yes)."""
    return (primary(tag) or "") in WHISPER_LANGUAGES


def language_name(tag: str) -> str:
    code = primary(tag) or tag
    return LANGUAGE_NAMES.get(code, tag)


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


def model_dir(settings: RecognitionSettings, language: str | None) -> str | None:
    """The model directory for a call in ``language`` (None: the bundled tiny.en, or
    CALLPLANE_WHISPER_MODEL_DIR when set)."""
    choice = settings.whisper_model
    if choice == TINY_EN:
        return settings.whisper_model_dir if is_english(language) else str(installed_base_dir())
    if choice == BASE:
        return str(installed_base_dir())
    return choice


def model_installed(settings: RecognitionSettings, language: str | None) -> bool:
    """Whether the model for a call in ``language`` is on this machine (the bundled tiny.en is
    checked where it is loaded: ``transcriber.bundled_model_dir``)."""
    directory = model_dir(settings, language)
    return directory is None or (Path(directory) / "model.bin").is_file()
