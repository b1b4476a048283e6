"""``{{variables}}`` of docs/agents.md, rendered without a template engine: nothing in a template
is ever evaluated, a name is only looked up.

``{{name}}`` / ``{{name|default}}``, spaces inside the braces ignored. A bare name is read from the
call's params, then the other party's contact data (top-level keys), then the config's defaults;
a dotted name reads one source and nests (``params.order.id``, ``contact.plan``,
``call.from_number``); ``now`` and ``today`` are built in. Strings render as they are, anything
else as compact JSON. A name found nowhere renders as its default; without one it renders as ""
and is reported (once, even where another placeholder gives it a default).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

_PLACEHOLDER = re.compile(r"\{\{([^{}|]*)(?:\|([^{}]*))?\}\}")
_MISSING: Any = object()


@dataclass(frozen=True)
class VariableSources:
    params: Mapping[str, Any] = field(default_factory=dict)
    contact: Mapping[str, Any] = field(default_factory=dict)
    defaults: Mapping[str, str] = field(default_factory=dict)
    from_number: str | None = None
    to_number: str | None = None
    direction: str | None = None
    now: datetime = field(default_factory=lambda: datetime.now(UTC))


def render(template: str, sources: VariableSources) -> tuple[str, list[str]]:
    """The rendered text and the names found nowhere (each once, in order of appearance)."""
    missing: list[str] = []

    def substitute(match: re.Match[str]) -> str:
        name = "".join(match.group(1).split())
        default = match.group(2)
        value = lookup(name, sources)
        if value is _MISSING:
            if default is not None:
                return default.strip()  # the template planned for its absence: not missing
            if name and name not in missing:
                missing.append(name)
            return ""
        return as_text(value)

    if "{{" not in template:
        return template, missing
    return _PLACEHOLDER.sub(substitute, template), missing


def lookup(name: str, sources: VariableSources) -> Any:
    if not name:
        return _MISSING
    if name == "now":
        return sources.now.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if name == "today":
        return sources.now.astimezone(UTC).date().isoformat()
    head, _, rest = name.partition(".")
    if rest:
        scope: Mapping[str, Any] | None = {
            "params": sources.params,
            "contact": sources.contact,
            "call": {
                "from_number": sources.from_number,
                "to_number": sources.to_number,
                "direction": sources.direction,
            },
            "variables": sources.defaults,
        }.get(head)
        if scope is not None:
            return _nested(scope, rest.split("."))
    for source in (sources.params, sources.contact, sources.defaults):
        if name in source:
            return source[name]
    return _MISSING


def _nested(value: Any, keys: list[str]) -> Any:
    for key in keys:
        if isinstance(value, Mapping) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return _MISSING
    return value


def as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def placeholders(template: str) -> list[str]:
    """The names a template uses (for the dashboard and validation hints)."""
    return ["".join(m.group(1).split()) for m in _PLACEHOLDER.finditer(template)]
