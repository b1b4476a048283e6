"""The one request pipeline: what every request of a family gets around its handler, whichever
way it came in (a family route, ``http.routing``, or a fast path, ``http.fast``):

1. the body policy (``http.body``), as the endpoint asks for it;
2. the unit of work (``http.unit_of_work``) around the handler: committed before the response
   exists, rolled back on anything raised;
3. error rendering in the family's shape, through the one renderer (``http.errors``).

A bug is not rendered here: it goes on up to ``CrashBarrier``, the same from either way in.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

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
        async with unit_of_work(request):
            return await handler(request)
    except Exception as exc:
        response = error_response(request.scope, family, exc)
        if response is None:
            raise
        return response
