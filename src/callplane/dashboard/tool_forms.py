"""Tools built with a form per kind in the agent editor, the tools' JSON one click away.

Each kind's fields come from its config model (``tools/<kind>.py``), the model the API validates
a commit's tools with: text, numbers and yes/no as inputs, lists and objects as small JSON boxes.
An added tool is validated by that model and appended to the editor's tools JSON, as a draft:
nothing is committed until the person commits."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from callplane.errors import InvalidInput
from callplane.tools.registry import TOOL_TYPES


@dataclass(frozen=True)
class Field:
    name: str
    #: text, number, boolean or json
    kind: str
    required: bool
    description: str


@dataclass(frozen=True)
class Kind:
    type: str
    fields: tuple[Field, ...]


def _kind_of(schema: dict[str, Any]) -> str:
    types = {schema.get("type")} | {a.get("type") for a in schema.get("anyOf", [])}
    types.discard(None)
    types.discard("null")
    if types == {"string"}:
        return "text"
    if types <= {"integer", "number"} and types:
        return "number"
    if types == {"boolean"}:
        return "boolean"
    return "json"


def kinds() -> list[Kind]:
    found = []
    for kind, tool in TOOL_TYPES.items():
        model = tool.config_model
        if model is None:
            continue
        schema = model.model_json_schema()
        required = set(schema.get("required", []))
        fields = tuple(
            Field(name, _kind_of(prop), name in required, str(prop.get("description", "")))
            for name, prop in schema.get("properties", {}).items()
            if name != "type"
        )
        found.append(Kind(kind, fields))
    return found


def tool_from_form(form: dict[str, str]) -> dict[str, Any]:
    """The tool the form of kind ``add_tool`` describes, validated by the kind's own model;
    InvalidInput naming the field otherwise."""
    wanted = form.get("add_tool", "")
    kind = next((k for k in kinds() if k.type == wanted), None)
    model = TOOL_TYPES[wanted].config_model if kind is not None else None
    if kind is None or model is None:
        raise InvalidInput(f"New tool: no tool kind {wanted!r}")
    tool: dict[str, Any] = {"type": kind.type}
    for field in kind.fields:
        raw = form.get(f"tool.{kind.type}.{field.name}", "").strip()
        if field.kind == "boolean":
            tool[field.name] = bool(raw)
            continue
        if not raw:
            continue
        if field.kind == "number":
            try:
                tool[field.name] = int(raw) if raw.lstrip("-").isdigit() else float(raw)
            except ValueError:
                raise InvalidInput(f"New tool: {field.name}: must be a number") from None
        elif field.kind == "json":
            try:
                tool[field.name] = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"New tool: {field.name}: not valid JSON ({exc.msg})") from None
        else:
            tool[field.name] = raw
    try:
        model.model_validate(tool)
    except ValidationError as exc:
        problems = [
            f"New tool: {'.'.join(str(p) for p in e['loc']) or kind.type}: {e['msg']}"
            for e in exc.errors()
        ]
        refused = InvalidInput(problems[0])
        refused.errors = problems
        raise refused from None
    return tool
