"""OpenAPI additions: the bearer security scheme on every route that needs an API key.

The scheme is added here rather than through a FastAPI security dependency, which would parse
the Authorization header a second time on every request.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from callplane.http.deps import current_tenant

SCHEME = "APIKey"


def _needs_key(dependant: Any) -> bool:
    return any(d.call is current_tenant or _needs_key(d) for d in dependant.dependencies)


def secured_operations(app: FastAPI) -> set[tuple[str, str]]:
    """(path, method) of every route that authenticates with an API key."""
    secured = set()
    for entry in app.router.routes:
        contexts = getattr(entry, "effective_route_contexts", None)
        for ctx in contexts() if contexts else []:
            if _needs_key(ctx.dependant):
                secured |= {(ctx.path, m.lower()) for m in ctx.methods}
    return secured


def install(app: FastAPI) -> None:
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = generate()
        schema.setdefault("components", {})["securitySchemes"] = {
            SCHEME: {
                "type": "http",
                "scheme": "bearer",
                "description": "An API key of your organization: `Authorization: Bearer cp_...`",
            }
        }
        secured = secured_operations(app)
        for path, operations in schema["paths"].items():
            for method, operation in operations.items():
                if (path, method) in secured:
                    operation["security"] = [{SCHEME: []}]
                else:  # a public route (signed URLs) never answers 401
                    operation.get("responses", {}).pop("401", None)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
