"""The OpenAPI document of /v1, made fit for third-party tools, and the docs pages that show it.

FastAPI generates the document from the routes; ``install`` finishes it in one pass:

- the bearer security scheme on every route that needs an API key (added here rather than through
  a FastAPI security dependency, which would parse the Authorization header a second time on
  every request);
- operation ids that are the endpoints' names (``list_calls``), which generated clients use as
  method names;
- every error response carrying its family's schema (a route that only names a status, like a
  409, gets the shape its family renders), with ``Retry-After`` and ``WWW-Authenticate`` headers;
- schema names unique and readable (FastAPI names two models of one name after their modules);
- ``$defs`` of inline schemas moved to ``components`` so every ``$ref`` resolves;
- ``servers``, ``info.contact``, ``info.license`` and described tags.

The docs pages (Swagger UI at /v1/docs, ReDoc at /v1/redoc) load their scripts from
``docs_assets/`` inside the package, so they work without internet access.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

from callplane.http.deps import current_tenant
from callplane.http.families import ErrorFamily

SCHEME = "APIKey"
DOCS_URL = "/v1/docs"
REDOC_URL = "/v1/redoc"
ASSETS_URL = "/v1/docs/assets"
LICENSE = {"name": "Apache-2.0", "identifier": "Apache-2.0"}

#: Every tag a route may carry, with what a reader of the docs needs to know about it.
TAGS: dict[str, str] = {
    "calls": "Outbound and inbound calls: create, list, read, cancel, find by attribute, and "
    "the events of a call's lifecycle.",
    "feedback": "Feedback entries on call transcripts, their resolution and their notes.",
    "contacts": "One JSON object of state per caller identifier, with revisions and expiry.",
    "custom data": "User-defined tables and their records: create, list with filters and "
    "sorting, query, update, delete.",
    "phone numbers": "The organization's phone numbers.",
    "external_calls": "Recorded calls from outside the platform, their recording legs, "
    "transcripts and summaries.",
    "recordings": "Recording audio behind signed, expiring URLs (no API key needed).",
    "voices": "Voices the organization's agents can speak with.",
    "call tags": "Tags that classify calls.",
    "webhooks": "Endpoints that receive signed event notifications, and their delivery log.",
    "web calls": "Talk to an agent from a browser over WebRTC, with an API key or a short-lived "
    "single-use token a website holds instead of one.",
    "agents": "Agents and their versioned configuration: commits, branches, diff, merge, and "
    "text-only test conversations.",
    "knowledge": "Knowledge bases: documents the agent can look things up in, split into chunks "
    "and searched with the database's own full-text engine.",
    "api keys": "The organization's API keys, each limited to its scopes and, if asked, an "
    "expiry; a key is shown once, when it is created.",
    "audit log": "The organization's append-only, hash-chained record of every change, every "
    "recording or contact-data read and every sign-in.",
    "campaigns": "Outbound calling programs: recipients from JSON or CSV, calling hours in each "
    "recipient's own time zone, retries by outcome, pacing across workers, the funnel of counts.",
    "suppressions": "The do-not-call list: numbers no campaign dials and POST /calls refuses.",
}

#: What the common query parameters mean, for routes that declare them without a description.
PARAMETER_DESCRIPTIONS: dict[str, str] = {
    "page": "Page number, from 1 (a page past the last one is empty)",
    "page_size": "Items per page",
    "status": "Only items in this status",
    "direction": "Only items of this direction",
    "created_after": "Only items created after this time (ISO 8601; without a zone, UTC)",
    "created_before": "Only items created before this time (ISO 8601; without a zone, UTC)",
    "sourceUpdatedAtColumn": "A TIMESTAMP column: apply the update only when the body's value "
    "in it is newer than the stored one (409 otherwise); the body must carry that value",
    "file_name": "The leg's file name, as shown in the call's recordings",
    "started_at": "When the leg started (ISO 8601; without a zone, UTC)",
    "Range": "One byte range (`bytes=START-END`), for seeking; other forms are ignored",
}

_JSON = "application/json"
_HEADERS: dict[str, dict[str, Any]] = {
    "401": {
        "WWW-Authenticate": {
            "description": "Always `Bearer`",
            "schema": {"type": "string"},
        }
    },
    "429": {
        "Retry-After": {
            "description": "Seconds to wait before retrying",
            "schema": {"type": "integer"},
        }
    },
    "503": {
        "Retry-After": {
            "description": "Seconds to wait before retrying",
            "schema": {"type": "integer"},
        }
    },
}
_MODULE_NAMED = re.compile(r"^callplane__(?P<domain>[a-z_]+?)__(?:[a-z_]+__)*(?P<name>\w+)$")


def _needs_key(dependant: Any) -> bool:
    return any(d.call is current_tenant or _needs_key(d) for d in dependant.dependencies)


def secured_operations(app: FastAPI) -> set[tuple[str, str]]:
    """(path, method) of every route that authenticates with an API key."""
    secured = set()
    for ctx in _route_contexts(app):
        if _needs_key(ctx.dependant):
            secured |= {(ctx.path_format, m.lower()) for m in ctx.methods}
    return secured


@dataclass(frozen=True)
class _Documented:
    name: str
    family: ErrorFamily | None


def _route_contexts(app: FastAPI) -> list[Any]:
    """Every route as FastAPI sees it once included (path with its prefix, methods, endpoint)."""
    contexts = []
    for entry in app.router.routes:
        effective = getattr(entry, "effective_route_contexts", None)
        if effective is not None:
            contexts += list(effective())
        elif isinstance(entry, APIRoute):
            contexts.append(entry)
    return contexts


def _documented_routes(app: FastAPI) -> dict[tuple[str, str], _Documented]:
    documented = {}
    for ctx in _route_contexts(app):
        original = getattr(ctx, "original_route", ctx)
        for method in ctx.methods or ():
            documented[(ctx.path_format, method.lower())] = _Documented(
                name=ctx.name, family=getattr(original, "error_family", None)
            )
    return documented


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _hoist_defs(node: Any, components: dict[str, Any]) -> None:
    """Move ``$defs`` of inline schemas (``Model.model_json_schema()`` in ``openapi_extra``) to
    the components, where their ``#/$defs/...`` references, rewritten, then resolve."""
    if isinstance(node, dict):
        for name, schema in node.pop("$defs", {}).items():
            components.setdefault(name, schema)
            _hoist_defs(schema, components)
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            node["$ref"] = "#/components/schemas/" + ref.removeprefix("#/$defs/")
        for value in node.values():
            _hoist_defs(value, components)
    elif isinstance(node, list):
        for value in node:
            _hoist_defs(value, components)


def _camel(snake: str) -> str:
    return "".join(part.capitalize() for part in snake.split("_"))


def _readable_names(schema: dict[str, Any]) -> None:
    """``callplane__contacts__schemas__Deleted`` → ``ContactsDeleted``; every title = its name."""
    components: dict[str, Any] = schema.get("components", {}).get("schemas", {})
    renames: dict[str, str] = {}
    for name in list(components):
        match = _MODULE_NAMED.match(name)
        if match:
            renames[name] = _camel(match["domain"]) + match["name"]
    for old, new in renames.items():
        components[new] = components.pop(old)
    for name, component in components.items():
        component["title"] = name
    if renames:
        _rewrite_refs(
            schema, {f"#/components/schemas/{o}": _ref(n)["$ref"] for o, n in renames.items()}
        )


def _rewrite_refs(node: Any, refs: dict[str, str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref in refs:
            node["$ref"] = refs[ref]
        for value in node.values():
            _rewrite_refs(value, refs)
    elif isinstance(node, list):
        for value in node:
            _rewrite_refs(value, refs)


def _binary_bodies(operation: dict[str, Any]) -> None:
    """A non-JSON body declared without a schema (audio) is bytes: say so, so that generated
    clients hand it over as a file instead of dropping the response."""
    for response in operation.get("responses", {}).values():
        for media, described in response.get("content", {}).items():
            if media != _JSON and not described.get("schema"):
                described["schema"] = {"type": "string", "format": "binary"}


def _family_errors(operation: dict[str, Any], family: ErrorFamily | None) -> None:
    """Give every error response without a body schema the one its family renders."""
    for code, response in operation.get("responses", {}).items():
        if not code.startswith(("4", "5")):
            continue
        content = response.setdefault("content", {})
        if family is not None and not content.get(_JSON, {}).get("schema"):
            content[_JSON] = {"schema": _ref(family.error_model.__name__)}
        if code in _HEADERS:
            response.setdefault("headers", {}).update(_HEADERS[code])


def _finish(app: FastAPI, schema: dict[str, Any], public_url: str) -> None:
    info = schema["info"]
    info.setdefault("contact", {"name": "The operators of this deployment", "url": public_url})
    info.setdefault("license", LICENSE)
    schema["servers"] = [{"url": public_url, "description": "This deployment"}]
    components = schema.setdefault("components", {})
    components["securitySchemes"] = {
        SCHEME: {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key of your organization: `Authorization: Bearer cp_...`",
        }
    }
    secured = secured_operations(app)
    routes = _documented_routes(app)
    used_tags: list[str] = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            route = routes.get((path, method))
            if route is not None:
                operation["operationId"] = route.name
                _family_errors(operation, route.family)
            _binary_bodies(operation)
            for parameter in operation.get("parameters", []):
                if not parameter.get("description") and parameter["name"] in PARAMETER_DESCRIPTIONS:
                    parameter["description"] = PARAMETER_DESCRIPTIONS[parameter["name"]]
            if (path, method) in secured:
                operation["security"] = [{SCHEME: []}]
            else:  # a public route (signed URLs) never answers 401
                operation.get("responses", {}).pop("401", None)
            used_tags += [t for t in operation.get("tags", []) if t not in used_tags]
    schema["tags"] = [{"name": t, "description": TAGS.get(t, "")} for t in used_tags]
    _hoist_defs(schema["paths"], components.setdefault("schemas", {}))
    _readable_names(schema)


def _add_docs_pages(app: FastAPI, openapi_url: str) -> None:
    title = f"{app.title} — documentation"
    app.mount(
        ASSETS_URL,
        StaticFiles(packages=[("callplane.http", "docs_assets")]),
        name="docs-assets",
    )

    @app.get(DOCS_URL, include_in_schema=False)
    async def swagger_ui(_request: Request) -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=title,
            swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_URL}/favicon-32x32.png",
        )

    @app.get(REDOC_URL, include_in_schema=False)
    async def redoc(_request: Request) -> HTMLResponse:
        return get_redoc_html(
            openapi_url=openapi_url,
            title=title,
            redoc_js_url=f"{ASSETS_URL}/redoc.standalone.js",
            redoc_favicon_url=f"{ASSETS_URL}/favicon-32x32.png",
            with_google_fonts=False,
        )


def install(app: FastAPI) -> None:
    """Finish the generated document (once, on first request) and serve the docs pages."""
    generate = app.openapi
    public_url: str = app.state.runtime.settings.public_url

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = generate()
        _finish(app, schema, public_url)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
    if app.openapi_url:
        _add_docs_pages(app, app.openapi_url)
