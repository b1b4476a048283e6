"""Templates (Jinja2, autoescaped) and the HTML responses built from them."""

from __future__ import annotations

import json
from datetime import datetime
from functools import cache
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from callplane.dashboard.tool_forms import field_errors
from callplane.users.roles import may

NAV = (
    ("overview", "Overview"),
    ("calls", "Calls"),
    ("contacts", "Contacts"),
    ("data", "Data tables"),
    ("external-calls", "External calls"),
    ("numbers", "Phone numbers"),
    ("agents", "Agents"),
    ("voices", "Voices"),
    ("campaigns", "Campaigns"),
    ("knowledge", "Knowledge"),
    ("webhooks", "Webhooks"),
    ("keys", "API keys"),
)


def _when(value: datetime | None) -> str:
    return "—" if value is None else value.strftime("%Y-%m-%d %H:%M:%S UTC")


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


def _inline(value: Any) -> str:
    """Tool arguments and such on one line as a person reads them (``order id: 42, slot: 2pm``);
    anything deeper than one level as compact JSON."""
    if isinstance(value, dict) and all(
        v is None or isinstance(v, str | int | float | bool) for v in value.values()
    ):
        shown = {True: "yes", False: "no", None: "—"}
        return ", ".join(
            f"{k.replace('_', ' ')}: {shown[v] if v is None or isinstance(v, bool) else v}"
            for k, v in value.items()
        )
    return json.dumps(value, ensure_ascii=False, default=str)


def _query(base: dict[str, Any], **changes: Any) -> str:
    merged = {k: v for k, v in {**base, **changes}.items() if v not in (None, "")}
    return "?" + urlencode(merged, doseq=True) if merged else ""


@cache
def build_environment() -> Environment:
    """One per process: every app's dashboard renders the same packaged templates, and each
    environment compiles the templates it renders (tens of ms each)."""
    env = Environment(
        loader=PackageLoader("callplane.dashboard", "templates"),
        autoescape=select_autoescape(default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.filters["pretty"] = _pretty
    env.filters["inline"] = _inline
    env.filters["segment"] = lambda value: quote(str(value), safe="")
    env.globals["query"] = _query
    env.globals["nav"] = NAV
    env.globals["tool_field_errors"] = field_errors
    return env


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    env: Environment = request.app.state.dashboard.templates
    visit = getattr(request.state, "visit", None)
    person = getattr(request.state, "person", None)
    page = env.get_template(template).render(
        base=request.scope.get("root_path", ""),
        person=person,
        # A viewer is shown no form it may not send (the route refuses it anyway).
        can_write=person is not None and may(person.role, "general", "POST"),
        csrf=visit.state.csrf if visit else "",
        section=context.pop("section", None),
        **context,
    )
    # Pages hold an organization's data: no copy stays in a shared computer's cache after
    # sign-out, and "back" cannot show them again.
    return HTMLResponse(page, status_code, headers={"Cache-Control": "no-store"})
