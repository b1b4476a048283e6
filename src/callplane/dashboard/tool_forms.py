"""The agent editor's tools as one form per tool, by kind, for new and existing tools alike; the
same tools as JSON one click away.

Each kind's fields come from its config model (``tools/<kind>.py``), the model the API validates
a commit's tools with: text, choices, numbers and yes/no as inputs, lists of words as one line,
lists of objects (a transfer's destinations) as rows, anything else as a small JSON box. The
form only turns text into JSON values; every rule is the API's (``validate_config``), checked as
one types and on commit.

In the page a tool is a group of fields named ``tool.<n>.<field>`` (a row's
``tool.<n>.<field>.<row>.<column>``), ``n`` its place in the list, so the paths the API names
in its errors (``config/tools/<n>/url``) are the ones the person reads beside each tool.

A form cannot tell an explicit default (``"writable": false``) from no key, nor ``10`` from
``10.0``, so a tool that came from a config carries its stored JSON along (``tool.<n>.stored``):
a field left as it was shown keeps its stored value, or its absence, and saving untouched forms
changes nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from callplane.errors import InvalidInput
from callplane.tools.registry import TOOL_TYPES

#: Free text longer than this is a text box, not a line.
_LONG_TEXT = 1_000
_INDEX = re.compile(r"^tool\.(\d{1,2})\.type$")


@dataclass(frozen=True)
class Field:
    name: str
    #: text, longtext, choice, number, boolean, words, rows or json
    kind: str
    required: bool
    description: str
    choices: tuple[str, ...] = ()
    #: a ``rows`` field's columns (scalar fields only)
    columns: tuple[Field, ...] = ()
    default: Any = None


@dataclass(frozen=True)
class Kind:
    type: str
    fields: tuple[Field, ...]
    #: what the agent is told the tool does when its description is left empty
    summary: str = ""


@dataclass
class Card:
    """One tool as the form shows it: its kind and each field's text as typed (a boolean is
    ``"1"`` or ``""``, a ``rows`` field a list of dicts of text)."""

    index: int
    kind: Kind
    values: dict[str, Any] = field(default_factory=dict)
    #: the tool as stored, when it came from a config; ``None`` for a new one
    stored: dict[str, Any] | None = None

    @property
    def stored_json(self) -> str:
        return "" if self.stored is None else json.dumps(self.stored, ensure_ascii=False)

    @property
    def label(self) -> str:
        name = self.values.get("name") or ""
        return f"{self.kind.type} {name}".strip()


def _types(schema: dict[str, Any]) -> set[str]:
    found = {schema.get("type")} | {a.get("type") for a in schema.get("anyOf", [])}
    found.discard(None)
    found.discard("null")
    return {str(t) for t in found}


def _field(name: str, prop: dict[str, Any], required: bool, defs: dict[str, Any]) -> Field:
    types = _types(prop)
    description = str(prop.get("description", ""))
    default = prop.get("default")
    if "enum" in prop:
        choices = tuple(str(c) for c in prop["enum"])
        return Field(name, "choice", required, description, choices, default=default)
    if types == {"string"}:
        longest = max(
            [prop.get("maxLength", 0)] + [a.get("maxLength", 0) for a in prop.get("anyOf", [])]
        )
        kind = "longtext" if longest >= _LONG_TEXT and not name.endswith("url") else "text"
        return Field(name, kind, required, description, default=default)
    if types and types <= {"integer", "number"}:
        return Field(name, "number", required, description, default=default)
    if types == {"boolean"}:
        return Field(name, "boolean", required, description, default=default)
    if types == {"array"}:
        items = prop.get("items", {})
        if _types(items) == {"string"} and "enum" not in items:
            return Field(name, "words", required, description, default=default)
        ref = str(items.get("$ref", "")).rsplit("/", 1)[-1]
        row = defs.get(ref)
        if row is not None:
            inner = set(row.get("required", []))
            columns = tuple(
                _field(n, p, n in inner, defs) for n, p in row.get("properties", {}).items()
            )
            if all(c.kind in ("text", "longtext", "choice", "number", "boolean") for c in columns):
                return Field(name, "rows", required, description, columns=columns)
    return Field(name, "json", required, description, default=default)


@cache
def kinds() -> tuple[Kind, ...]:
    found = []
    for kind, tool in TOOL_TYPES.items():
        model = tool.config_model
        if model is None:
            continue
        schema = model.model_json_schema()
        required = set(schema.get("required", []))
        defs = schema.get("$defs", {})
        fields = tuple(
            _field(name, prop, name in required, defs)
            for name, prop in schema.get("properties", {}).items()
            if name != "type"
        )
        found.append(Kind(kind, fields, str(getattr(tool, "default_description", "") or "")))
    return tuple(found)


def kind_named(type_: str) -> Kind | None:
    return next((k for k in kinds() if k.type == type_), None)


# -- config → form ---------------------------------------------------------------------------


def _shown(f: Field, value: Any) -> Any:
    if value is None:
        return ""
    if f.kind == "boolean":
        return "1" if value else ""
    if f.kind == "words" and isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if f.kind == "rows" and isinstance(value, list):
        return [{c.name: _shown(c, row.get(c.name)) for c in f.columns} for row in value]
    if f.kind == "json":
        return json.dumps(value, indent=2, ensure_ascii=False)
    return str(value)


def _displayed(f: Field, tool: dict[str, Any]) -> Any:
    """A stored tool's field as its form shows it (a yes/no left out shows its default)."""
    if f.name not in tool and f.kind == "boolean":
        return _shown(f, f.default)
    return _shown(f, tool.get(f.name))


def cards_of(tools: Any) -> list[Card]:
    """The tools of a config as forms; InvalidInput when one cannot be shown as its kind's form
    without losing something (then it stays JSON)."""
    if not isinstance(tools, list):
        raise InvalidInput("Tools: a list is needed to show them as forms")
    cards = []
    for index, tool in enumerate(tools):
        where = f"Tools: tools/{index}"
        kind = kind_named(tool.get("type", "")) if isinstance(tool, dict) else None
        if kind is None:
            raise InvalidInput(f"{where}: no form for this tool: its type is not a known kind")
        known = {f.name: f for f in kind.fields}
        unknown = sorted(set(tool) - set(known) - {"type"})
        if unknown:
            raise InvalidInput(f"{where}: unknown key {unknown[0]}; fix it in the JSON")
        for f in kind.fields:
            value = tool.get(f.name)
            if f.kind == "rows" and value is not None:
                columns = {c.name for c in f.columns}
                if not isinstance(value, list) or not all(
                    isinstance(r, dict) and set(r) <= columns for r in value
                ):
                    raise InvalidInput(
                        f"{where}/{f.name}: not rows of known keys; fix it in the JSON"
                    )
        values = {f.name: _displayed(f, tool) for f in kind.fields}
        cards.append(Card(index, kind, values, stored=tool))
    return cards


# -- form → config ---------------------------------------------------------------------------


def cards_from_form(form: dict[str, str]) -> list[Card]:
    """The tools as typed, in their order; the indices renumbered from 0."""
    indices = sorted(int(m.group(1)) for k in form if (m := _INDEX.match(k)))
    cards: list[Card] = []
    for index in indices:
        kind = kind_named(form[f"tool.{index}.type"])
        if kind is None:
            continue
        values: dict[str, Any] = {}
        for f in kind.fields:
            key = f"tool.{index}.{f.name}"
            if f.kind == "rows":
                values[f.name] = _rows_from_form(form, key, f)
            else:
                values[f.name] = form.get(key, "")
        cards.append(Card(len(cards), kind, values, _stored(form.get(f"tool.{index}.stored"))))
    return cards


def _stored(text: str | None) -> dict[str, Any] | None:
    try:
        stored = json.loads(text) if text else None
    except json.JSONDecodeError:
        return None
    return stored if isinstance(stored, dict) else None


def _rows_from_form(form: dict[str, str], key: str, f: Field) -> list[dict[str, str]]:
    pattern = re.compile(rf"^{re.escape(key)}\.(\d{{1,2}})\.")
    numbers = sorted({int(m.group(1)) for k in form if (m := pattern.match(k))})
    rows = []
    for n in numbers:
        row = {c.name: form.get(f"{key}.{n}.{c.name}", "") for c in f.columns}
        # A row left blank is no row (the form always offers one blank row to fill in);
        # a choice alone does not make a row.
        if any(
            v.strip() for c, v in zip(f.columns, row.values(), strict=True) if c.kind != "choice"
        ):
            rows.append(row)
    return rows


def _value(f: Field, raw: str, where: str) -> Any:
    """``raw`` as the field's JSON value; ``None`` for no value."""
    if f.kind == "boolean":
        checked = bool(raw)
        return None if checked == bool(f.default) else checked
    text = raw.strip()
    if not text:
        return None
    if f.kind == "number":
        try:
            return int(text) if text.lstrip("-").isdigit() else float(text)
        except ValueError:
            raise InvalidInput(f"{where}: must be a number") from None
    if f.kind == "words":
        return [w.strip() for w in text.split(",") if w.strip()]
    if f.kind == "json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{where}: not valid JSON ({exc.msg})") from None
    return raw


def tools_of(cards: list[Card]) -> list[dict[str, Any]]:
    """The tools the forms describe, not yet validated (the API's ``validate_config`` does, on
    a check as on a commit); InvalidInput naming each field that is not even a value."""
    tools, problems = [], []
    for card in cards:
        tool: dict[str, Any] = {"type": card.kind.type}
        stored = card.stored or {}
        for f in card.kind.fields:
            where = f"Tools: tools/{card.index}/{f.name}"
            typed_value = card.values.get(f.name, [] if f.kind == "rows" else "")
            if card.stored is not None and typed_value == _displayed(f, stored):
                if f.name in stored:
                    tool[f.name] = stored[f.name]
                continue
            try:
                if f.kind == "rows":
                    rows = []
                    for n, typed in enumerate(card.values.get(f.name) or []):
                        same = _stored_row(f, stored.get(f.name), typed)
                        if same is not None:
                            rows.append(same)
                            continue
                        row = {}
                        for c in f.columns:
                            cell = _value(c, typed.get(c.name, ""), f"{where}/{n}/{c.name}")
                            if cell is not None:
                                row[c.name] = cell
                        rows.append(row)
                    value: Any = rows or None
                else:
                    value = _value(f, card.values.get(f.name, ""), where)
            except InvalidInput as exc:
                problems.append(exc.message)
                continue
            if value is not None:
                tool[f.name] = value
        tools.append(tool)
    if problems:
        refused = InvalidInput(problems[0])
        refused.errors = problems
        raise refused
    return tools


def _stored_row(f: Field, stored: Any, typed: dict[str, str]) -> dict[str, Any] | None:
    """The stored row a typed row shows unchanged, if any."""
    for row in stored if isinstance(stored, list) else []:
        if isinstance(row, dict) and _shown(f, [row])[0] == typed:
            return row
    return None


def blank(kind: Kind, index: int) -> Card:
    values: dict[str, Any] = {}
    for f in kind.fields:
        if f.kind == "rows":
            values[f.name] = []
        else:
            values[f.name] = _shown(f, f.default) if f.kind == "boolean" else ""
    return Card(index, kind, values)


# -- errors beside their fields --------------------------------------------------------------

#: A path in an error, the API's (``config/tools/2/url``) or the forms' (``Tools: tools/2/url``).
_ERROR_PATH = re.compile(r"^(?:config/tools|Tools: tools)/(\d{1,2})(?:/([a-z_]+))?(/[^:]*)?: (.+)$")


def field_errors(errors: list[str]) -> dict[str, list[str]]:
    """Each error that names a tool's field, by ``<n>.<field>`` (``<n>`` for the tool as a
    whole), worded as read beside the field: a row's place and column, then the problem."""
    found: dict[str, list[str]] = {}
    for error in errors:
        match = _ERROR_PATH.match(error)
        if match is None:
            continue
        index, name, rest, problem = match.groups()
        key = f"{index}.{name}" if name else index
        found.setdefault(key, []).append(f"{_place(rest[1:])}: {problem}" if rest else problem)
    return found


def _place(rest: str) -> str:
    """``2/number`` as the person reads the table: ``row 3, number``."""
    row, _, column = rest.partition("/")
    if not row.isdigit():
        return rest
    return f"row {int(row) + 1}" + (f", {column}" if column else "")


def error_slots(cards: list[Card], errors: list[str]) -> list[tuple[str, list[str]]]:
    """Every field's error slot in the forms (``tool-<n>-<field>-error``) and its errors now, so
    a live check fills and clears each one."""
    found = field_errors(errors)
    slots = []
    for card in cards:
        slots.append((f"tool-{card.index}-error", found.get(str(card.index), [])))
        for f in card.kind.fields:
            key = f"{card.index}.{f.name}"
            slots.append((f"tool-{card.index}-{f.name}-error", found.get(key, [])))
    return slots
