"""The one request pipeline: what every request of a family gets around its handler, whichever
way it came in (a family route, ``http.routing``, or a fast path, ``http.fast``):

1. the body policy (``http.body``), as the endpoint asks for it;
2. the unit of work (``http.unit_of_work``) around the handler: committed before the response
   exists, rolled back on anything raised; an audited request's event (``audit.requests``) is
   opened here and committed with the change it records;
3. error rendering in the family's shape, through the one renderer (``http.errors``).

A bug is not rendered here: it goes on up to ``CrashBarrier``, the same from either way in.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from callplane.audit.requests import note_response, open_event
from callplane.http.body import BodyPolicy, police_body
from callplane.http.errors import error_response
from callplane.http.families import ErrorFamily
from callplane.http.unit_of_work import unit_of_work


async def run_pipeline(
    request: Request,
    family: ErrorFamily,
    policy: BodyPolicy,
    handler: Callable[[Request], Awaitable[Response]],
) -> Response:
    """``handler``'s response to ``request`` (the policed request when the policy read a body),
    or the response its error is rendered as."""
    try:
        if policy.applies:
            request = await police_body(request, exact_text=policy.exact_text)
        route = request.scope.get("route")
        open_event(
            request,
            getattr(route, "audit_action", None),
            getattr(route, "audit_resource_type", "api"),
        )
        async with unit_of_work(request):
            answer = await handler(request)
            note_response(request.scope, answer)
            return answer
    except Exception as exc:
        response = error_response(request.scope, family, exc)
        if response is None:
            raise
        return response
