"""The agent editor's tools part: forms (``tool_forms``) or the JSON, and the edits that go
between them (add a tool of a kind, remove one, switch), none of which commits anything."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from callplane.dashboard.tool_forms import (
    Card,
    blank,
    cards_from_form,
    cards_of,
    kind_named,
    tools_of,
)
from callplane.errors import InvalidInput


@dataclass
class Editor:
    """The tools part of the agent editor: ``form`` mode shows ``cards``, ``json`` mode
    ``text``; ``errors`` are the last switch's or edit's."""

    mode: str
    cards: list[Card]
    text: str
    errors: list[str] = field(default_factory=list)
    #: the config says ``"tools": []``, kept so when no tool is added
    listed: bool = False


def _dumped(tools: Any) -> str:
    return json.dumps(tools, indent=2, ensure_ascii=False)


def editor_of_config(config: dict[str, Any]) -> Editor:
    """Forms when every tool has one, else the JSON (a stored tool a newer rule refuses)."""
    tools, listed = config.get("tools", []), config.get("tools") == []
    try:
        return Editor("form", cards_of(tools), _dumped(tools), listed=listed)
    except InvalidInput:
        return Editor("json", [], _dumped(tools), listed=listed)


def editor_of_form(form: dict[str, str]) -> Editor:
    listed = bool(form.get("tools_listed"))
    if form.get("tools_mode") == "form":
        return Editor("form", cards_from_form(form), "", listed=listed)
    return Editor("json", [], form.get("tools", ""), listed=listed)


def _parsed(text: str) -> Any:
    try:
        return json.loads(text) if text.strip() else []
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise InvalidInput(f"Tools: not valid JSON ({where}: {exc.msg})") from None


def tools_in(form: dict[str, str]) -> Any:
    """The tools a submitted editor describes, from whichever mode it was in; ``None`` for no
    tools key. Not yet validated: that is the API's ``validate_config``."""
    if form.get("tools_mode") == "form":
        return tools_of(cards_from_form(form))
    text = form.get("tools", "")
    return _parsed(text) if text.strip() else None


def edit(form: dict[str, str], action: str) -> tuple[Editor, str | None]:
    """The editor after ``action`` (``add``, ``remove:<n>``, ``json``, ``forms``) and a notice;
    on a problem, the editor as it was with the problem in ``errors``."""
    edited, notice = _edit(editor_of_form(form), form, action)
    edited.listed = bool(form.get("tools_listed"))
    return edited, notice


def _edit(editor: Editor, form: dict[str, str], action: str) -> tuple[Editor, str | None]:
    try:
        if action == "json":
            text = _dumped(tools_of(editor.cards)) if editor.mode == "form" else editor.text
            return Editor("json", [], text), None
        if action == "forms":
            cards = cards_of(_parsed(editor.text)) if editor.mode == "json" else editor.cards
            return Editor("form", cards, ""), None
        if editor.mode != "form":
            raise InvalidInput("Tools: switch to the forms to add or remove a tool")
        if action == "add":
            kind = kind_named(form.get("new_tool", ""))
            if kind is None:
                raise InvalidInput("Tools: choose the kind of tool to add")
            editor.cards.append(blank(kind, len(editor.cards)))
            return editor, f"A {kind.type} tool was added below: fill it in, then commit."
        if action.startswith("remove:") and action[7:].isdigit():
            gone = int(action[7:])
            kept = [c for c in editor.cards if c.index != gone]
            for n, card in enumerate(kept):
                card.index = n
            return Editor("form", kept, ""), "Tool removed from the draft: commit to keep it."
        raise InvalidInput("Tools: unknown action")
    except InvalidInput as exc:
        editor.errors = exc.errors
        return editor, None
