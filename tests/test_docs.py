"""The README (or a page of docs/) documents every setting and every CLI command (a new one
without docs fails)."""

from __future__ import annotations

from pathlib import Path

import pytest

from callplane.cli.main import app as cli_app
from callplane.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
# The README, and the topic pages of docs/ it leads to.
README = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted(ROOT.glob("docs/*.md"))])


@pytest.mark.parametrize("field", sorted(Settings.model_fields))
def test_every_setting_is_documented(field: str) -> None:
    assert f"`CALLPLANE_{field.upper()}`" in README


def _commands() -> list[str]:
    names = [c.name or c.callback.__name__ for c in cli_app.registered_commands]  # type: ignore[union-attr]
    for group in cli_app.registered_groups:
        names += [f"{group.name} {c.name}" for c in group.typer_instance.registered_commands]  # type: ignore[union-attr]
    return names


@pytest.mark.parametrize("command", _commands())
def test_every_command_is_documented(command: str) -> None:
    assert f"callplane {command}" in README
