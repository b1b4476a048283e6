"""The README (with docs/, which it links) documents every setting and every CLI command (a new
one without docs fails), every citation points into the repository, and every pointer into the
docs finds its page and section."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from callplane.cli.main import app as cli_app
from callplane.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
README = "\n".join(
    path.read_text() for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
)


@pytest.mark.parametrize("field", sorted(Settings.model_fields))
def test_every_setting_is_documented(field: str) -> None:
    assert f"`CALLPLANE_{field.upper()}`" in README


def _shown(value: object) -> str:
    """A setting's default as the docs' tables write it: `true`, `20` (not 20.0), `[]`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list | tuple):
        return json.dumps(list(value))
    return str(value)


def test_every_documented_default_is_the_real_one() -> None:
    # A settings table that names a default the code no longer has misleads an operator (the
    # README said `smart` endpointing for a while after `model` became the default).
    # From the fields themselves, not Settings(): the environment must not change the answer.
    default = {
        name: field.get_default(call_default_factory=True)
        for name, field in Settings.model_fields.items()
    }
    rows = re.findall(r"^\| `CALLPLANE_([A-Z0-9_]+)` \| `([^`|]*)` \|", README, re.MULTILINE)
    assert len(rows) > 40
    wrong = [
        (name, documented, _shown(default[name.lower()]))
        for name, documented in rows
        if _shown(default[name.lower()]) != documented
    ]
    assert not wrong


def _commands() -> list[str]:
    names = [c.name or c.callback.__name__ for c in cli_app.registered_commands]  # type: ignore[union-attr]
    for group in cli_app.registered_groups:
        names += [f"{group.name} {c.name}" for c in group.typer_instance.registered_commands]  # type: ignore[union-attr]
    return names


@pytest.mark.parametrize("command", _commands())
def test_every_command_is_documented(command: str) -> None:
    assert f"callplane {command}" in README


#: The word the design notes went by outside the repository; built here so this file does not
#: name it.
_OUTSIDE = "DES" + "IGN"


def _tracked_files() -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / name for name in listed.decode().split("\0") if name]


def test_every_citation_points_into_the_repository() -> None:
    """Comments and docs explain with the repository's own documents (docs/*.md): a reference to
    design notes kept elsewhere is one a reader cannot follow. Tests that check an output does
    not carry the word (``"..." not in``) are the only place it may stand."""
    word = re.compile(rf"\b{_OUTSIDE}\b".encode())
    allowed = re.compile(rf'"{_OUTSIDE}" not in'.encode())
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _tracked_files()
        if path.is_file()
        for number, line in enumerate(path.read_bytes().splitlines(), 1)
        if word.search(line) and not allowed.search(line)
    ]
    assert found == []


def _anchors(page: Path) -> set[str]:
    """The anchors of a Markdown page's headings, as GitHub makes them."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(), re.MULTILINE)
    return {re.sub(r"[^\w -]", "", h.lower()).replace(" ", "-") for h in headings}


def test_every_pointer_into_the_docs_finds_its_page_and_section() -> None:
    """A pointer ``docs/<page>.md#<section>`` or ``README.md#<section>`` in any file, and a link
    between the pages of docs/: the page exists and has that section, so none rots silently."""
    pointers = re.compile(r"(?<![\w/.-])(docs/[\w-]+\.md|README\.md)(?:#([\w-]+))?")
    links = re.compile(r"\]\(([\w-]+\.md)(?:#([\w-]+))?\)")
    broken = []
    for path in _tracked_files():
        if not path.is_file() or path.suffix not in (".py", ".md", ".cfg", ".js", ".toml", ".txt"):
            continue
        text = path.read_text()
        found = [(ROOT / page, anchor) for page, anchor in pointers.findall(text)]
        if path.parent == ROOT / "docs":
            found += [(path.parent / page, anchor) for page, anchor in links.findall(text)]
        for page, anchor in found:
            if not page.is_file() or (anchor and anchor not in _anchors(page)):
                broken.append(f"{path.relative_to(ROOT)}: {page.relative_to(ROOT)}#{anchor}")
    assert sorted(set(broken)) == []
