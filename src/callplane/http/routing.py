"""Routers that declare their error family, and the route class that runs their requests.

``family_router(STATUS, prefix="/contacts", tags=[...])`` gives an APIRouter whose routes render
every error in the STATUS shape and document those shapes in OpenAPI. Each request of such a
route goes through three small pieces, each in its own module:

0. a path that is not UTF-8 once percent-decoded is refused (``http.conventions``);
1. the body policy (``http.body``): size, content type, strict JSON, depth — skipped for an
   endpoint marked ``@streamed_body``, which reads ``request.stream()`` itself;
2. the unit of work (``http.unit_of_work``) around the handler: commit on success, roll back
   on anything raised;
3. error rendering (``http.errors``), where every exception ends up.

A route never serves a URL that a more concrete path owns (``http.paths``): that is a 405.

Each router also declares the API key scope its routes need (``kit.scopes.RouteScopes``); the
route keeps it as ``required_scope``, which authentication checks (``http.deps``).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from fastapi import APIRouter
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from callplane.audit.requests import audit_action_for, resource_type_for
from callplane.http.body import BodyPolicy
from callplane.http.conventions import require_utf8_path
from callplane.http.families import ErrorFamily
from callplane.http.paths import route_path, shadowed
from callplane.http.pipeline import run_pipeline
from callplane.http.responses import JSONResponse
from callplane.kit.scopes import RouteScopes

_STREAMED_BODY = "__callplane_streamed_body__"
_EXACT_TEXT = "__callplane_exact_json_text__"

EndpointT = TypeVar("EndpointT", bound=Callable[..., Any])


def streamed_body(endpoint: EndpointT) -> EndpointT:
    """Mark an endpoint that reads its own raw body (``request.stream()``, e.g. an audio upload):
    the route class then leaves the body alone (no JSON policy, no size limit: the endpoint
    bounds what it reads)."""
    setattr(endpoint, _STREAMED_BODY, True)
    return endpoint


def exact_json_text(endpoint: EndpointT) -> EndpointT:
    """Mark an endpoint that stores its body's JSON as text and returns that text (contact data):
    the body policy then keeps integers of any size and NUL characters exactly instead of
    refusing what a JSON column could not hold (``callplane.kit.jsonvalues``)."""
    setattr(endpoint, _EXACT_TEXT, True)
    return endpoint


def policy_of(endpoint: Callable[..., Any]) -> BodyPolicy:
    return BodyPolicy(
        applies=not getattr(endpoint, _STREAMED_BODY, False),
        exact_text=getattr(endpoint, _EXACT_TEXT, False),
    )


def family_route_class(family: ErrorFamily, scopes: RouteScopes) -> type[APIRoute]:
    class FamilyRoute(APIRoute):
        error_family = family
        body_policy: BodyPolicy
        #: the scope a key needs here; None for a route that takes no key
        required_scope: str | None
        #: what its requests are recorded as in the audit log (None: a read not audited)
        audit_action: str | None
        audit_resource_type: str

        def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
            responses = family.openapi_responses()
            for code, extra in (kwargs.pop("responses", None) or {}).items():
                responses[code] = {**responses.get(code, {}), **extra}
            kwargs.setdefault("response_class", JSONResponse)
            # The body policy decides about Content-Type (a body without one is JSON, on every
            # route); FastAPI must then parse what the policy hands it.
            kwargs["strict_content_type"] = False
            self.body_policy = policy_of(endpoint)
            methods = kwargs.get("methods") or ("GET",)
            self.required_scope = scopes.for_route(methods, endpoint)
            tags = kwargs.get("tags") or ()
            self.audit_resource_type = resource_type_for(tags)
            self.audit_action = audit_action_for(endpoint, methods, tags)
            if self.required_scope is not None:
                responses.setdefault(
                    403,
                    {
                        "description": "The key lacks this route's scope",
                        "model": family.error_model,
                    },
                )
                responses[403]["description"] = f"The key lacks the scope {self.required_scope}"
                # Documented where clients and the route-walking test read it.
                kwargs["openapi_extra"] = {
                    **(kwargs.get("openapi_extra") or {}),
                    "x-callplane-scope": self.required_scope,
                }
            super().__init__(path, endpoint, responses=responses, **kwargs)

        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()
            route = self

            async def handle(request: Request) -> Response:
                if shadowed(request.app, route, route_path(request.scope)):
                    raise HTTPException(405)
                require_utf8_path(request.scope)
                return await run_pipeline(request, family, route.body_policy, handler)

            return handle

    FamilyRoute.__name__ = f"{family.name.title()}Route"
    return FamilyRoute


def family_router(family: ErrorFamily, *, scopes: RouteScopes, **kwargs: Any) -> APIRouter:
    return APIRouter(route_class=family_route_class(family, scopes), **kwargs)
