"""Fast paths: the few requests clients send thousands of times a second, served by one ASGI layer
in front of the app, without FastAPI's route matching and dependency solving (profiled, a third
of such a request).

Each domain declares its fast paths beside its routes (``custom_data.fast``,
``external_calls.fast``) as ``FastPath`` entries: the route each stands for, by method and path,
the spellings of the path it takes (a pattern; the layer itself leaves any escaped path to the
routes) and ``take``, which reads the request's scope and returns its answer, or None to leave it
to the route. App assembly hands the table (``api.V1_FAST_PATHS``) to ``FastPathLayer``, which
finds each entry's route and runs a request it takes through the route's own request pipeline
(``http.pipeline``): the route's family, the route's body policy, the unit of work, the one
renderer. So the answers, errors included, are the route's, byte for byte
(``tests/test_fast_paths.py`` proves it for every entry of the table).

The routes remain the contract (OpenAPI documents them) and answer everything a fast path does
not take exactly; an answer that only a look at the body can tell is the route's raises
``LeaveToRoute`` and the request goes on to the app with its body as received.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi.routing import APIRoute, iter_route_contexts
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from callplane.http.body import BodyPolicy, PolicedRequest
from callplane.http.families import ErrorFamily
from callplane.http.pipeline import run_pipeline
from callplane.http.responses import json_response

#: A fast path's answer to one request: the body the route would answer it with.
Answer = Callable[[Request], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class FastPath:
    #: the route it stands for: its method and full path as the app serves it
    method: str
    route: str
    #: the path spellings it takes (matched whole)
    pattern: re.Pattern[str]
    #: the answer to a request of this scope and path match, or None: the route's to answer
    take: Callable[[Scope, re.Match[str]], Answer | None]


class LeaveToRoute(Exception):  # noqa: N818 (a decision, not an error)
    """Raised by an answer, before it has done anything, for a request only the route can answer
    as it would (e.g. a body that is not a JSON object, which FastAPI's validation words)."""

    def __init__(self, request: Request) -> None:
        super().__init__()
        self.request = request


@dataclass(frozen=True)
class _Entry:
    fast: FastPath
    route: APIRoute
    family: ErrorFamily
    policy: BodyPolicy
    #: the path up to its first parameter: a cheap test before the pattern
    prefix: str


def _entry(fast: FastPath, routes: Sequence[BaseRoute]) -> _Entry:
    """``fast`` with its route, as FastAPI sees the route once included (its full path)."""
    for context in iter_route_contexts(list(routes)):
        route = context.original_route
        if (
            context.path == fast.route
            and fast.method in (context.methods or ())
            and isinstance(route, APIRoute)
            and hasattr(route, "error_family")
        ):
            family: ErrorFamily = getattr(route, "error_family")  # noqa: B009
            policy: BodyPolicy = getattr(route, "body_policy")  # noqa: B009
            return _Entry(fast, route, family, policy, fast.route.split("{", 1)[0])
    raise ValueError(f"fast path {fast.method} {fast.route} has no family route")


class FastPathLayer:
    """ASGI middleware in front of the app (inside the request-id, HEAD and error layers)."""

    def __init__(
        self, app: ASGIApp, routes: Sequence[BaseRoute], paths: Iterable[FastPath]
    ) -> None:
        self.app = app
        self.paths = tuple(paths)
        by_method: dict[str, list[_Entry]] = {}
        for fast in self.paths:
            by_method.setdefault(fast.method, []).append(_entry(fast, routes))
        self._by_method = {method: tuple(entries) for method, entries in by_method.items()}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            for entry in self._by_method.get(scope["method"], ()):
                if not path.startswith(entry.prefix):
                    continue
                match = entry.fast.pattern.fullmatch(path)
                if match is None:
                    continue
                raw = scope.get("raw_path")
                if isinstance(raw, bytes) and b"%" in raw:
                    break  # an escaped spelling: the routes decode it their way
                answer = entry.fast.take(scope, match)
                if answer is not None:
                    # As routing leaves them (the audit log names the resource from them).
                    scope["path_params"] = match.groupdict()
                    await self._serve(entry, answer, scope, receive, send)
                    return
        await self.app(scope, receive, send)

    async def _serve(
        self, entry: _Entry, answer: Answer, scope: Scope, receive: Receive, send: Send
    ) -> None:
        # The matched route, as routing would have left it: a bug's 500 (``CrashBarrier``) and
        # whatever reads the route from the scope see this request as the route's.
        scope["route"] = entry.route

        async def handler(request: Request) -> Response:
            return json_response(await answer(request))

        try:
            response = await run_pipeline(
                Request(scope, receive), entry.family, entry.policy, handler
            )
        except LeaveToRoute as left:
            request = left.request
            await self.app(
                scope, request.replay() if isinstance(request, PolicedRequest) else receive, send
            )
            return
        await response(scope, receive, send)
