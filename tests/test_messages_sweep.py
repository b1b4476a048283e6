"""No error message repeats its field name (issue 27): every ``InvalidInput(message, loc=...)``
written in the source, rendered as clients see it, names its field once."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from callplane.kit.messages import describe, field_name

SOURCE = Path(__file__).resolve().parent.parent / "src" / "callplane"


def _literal(node: ast.expr) -> str | None:
    """The text of a string or f-string (its placeholders as ``{}``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}"
            for v in node.values
        )
    return None


def _raised() -> list[tuple[str, tuple[str, ...], str]]:
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (
                isinstance(node, ast.Call) and getattr(node.func, "id", None) == "InvalidInput"
            ):
                continue
            if not node.args:
                continue
            message = _literal(node.args[0])
            loc = next((k.value for k in node.keywords if k.arg == "loc"), None)
            if message is None or not isinstance(loc, ast.Tuple):
                continue
            parts = tuple(e.value for e in loc.elts if isinstance(e, ast.Constant))
            if len(parts) == len(loc.elts):
                found.append((message, parts, f"{path.relative_to(SOURCE)}:{node.lineno}"))
    return found


MESSAGES = _raised()


def test_the_sweep_finds_the_messages() -> None:
    assert len(MESSAGES) >= 20


@pytest.mark.parametrize(("message", "loc", "where"), MESSAGES, ids=[m[2] for m in MESSAGES])
def test_no_message_repeats_its_field(message: str, loc: tuple[str, ...], where: str) -> None:
    field = field_name(loc)
    shown = describe(loc, message)
    if field and shown.startswith(field + ": "):
        # Labelled by the renderer: the sentence after the label must not name the field again
        # ("friendly_name: friendly_name must be ...").
        rest = shown[len(field) + 2 :]
        last = field.rsplit(".", 1)[-1]
        assert not rest.startswith((field, last)), f"{where}: {shown!r}"


def test_a_sentence_naming_its_field_names_it_once_as_its_label() -> None:
    loc = ("body", "friendly_name")
    assert describe(loc, "friendly_name must be a string") == "friendly_name: must be a string"
    assert describe(loc, "must be a string") == "friendly_name: must be a string"
    assert describe(loc, "friendly_name: must be a string") == "friendly_name: must be a string"
