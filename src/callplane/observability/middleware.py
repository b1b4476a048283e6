"""HTTP metrics (pure ASGI, outermost but for the request id): each request counted by method,
route template and status, and timed.

The label is the route's template (``/v1/calls/{call_uuid}``), never the path itself, so ids in
URLs never become series. The path is matched against the app's route templates here, once,
by one combined regular expression (so the fast paths of ``custom_data.hot`` and
``external_calls.hot``, answered before routing, are labelled like the routes they stand for);
a mounted app's (the dashboard's) requests take the route its router recorded; a path no route
knows is ``unmatched``.

The request's id (``http.middleware`` sets it) is put in the logging context for the request's
duration, so every log line written while serving it carries ``request_id``.
"""

from __future__ import annotations

import re
import time

from fastapi.routing import iter_route_contexts
from prometheus_client import Counter, Histogram
from starlette.routing import BaseRoute, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from callplane.observability import logcontext
from callplane.observability.metrics import http_duration, http_requests, method_label

UNMATCHED = "unmatched"
_GROUP = re.compile(r"\(\?P<[^>]+>")


class HttpMetrics:
    def __init__(self, app: ASGIApp, routes: list[BaseRoute]) -> None:
        self.app = app
        self._routes = routes
        self._table: tuple[re.Pattern[str], list[str]] | None = None
        # Label lookups cost more than the observation: each series' child is kept here.
        self._timers: dict[tuple[str, str], Histogram] = {}
        self._counters: dict[tuple[str, str, int], Counter] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] == "/metrics":
            await self.app(scope, receive, send)
            return
        status = 500
        started = time.perf_counter()

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        request_id = scope.get("state", {}).get("request_id")
        token = logcontext.request_id.set(request_id)
        try:
            await self.app(scope, receive, send_status)
        finally:
            logcontext.request_id.reset(token)
            elapsed = time.perf_counter() - started
            method = method_label(scope["method"])
            route = self._template(scope)
            timer = self._timers.get((method, route))
            if timer is None:
                timer = self._timers[(method, route)] = http_duration.labels(method, route)
            timer.observe(elapsed)
            counter = self._counters.get((method, route, status))
            if counter is None:
                code = str(status) if 100 <= status <= 599 else "other"
                counter = http_requests.labels(method, route, code)
                self._counters[(method, route, status)] = counter
            counter.inc()

    def _template(self, scope: Scope) -> str:
        root = scope.get("root_path")
        if root and isinstance(root, str):
            # A mounted app (the dashboard): its router recorded the route it chose.
            path = getattr(scope.get("route"), "path_format", None)
            if isinstance(path, str):
                return f"{root}{path}"
        return self._match(scope["path"])

    def _match(self, path: str) -> str:
        if self._table is None:
            self._table = _compile(self._routes)
        pattern, templates = self._table
        found = pattern.match(path)
        if found is None or found.lastgroup is None:
            return UNMATCHED
        return templates[int(found.lastgroup[1:])]


def _compile(routes: list[BaseRoute]) -> tuple[re.Pattern[str], list[str]]:
    """One alternation of every route's regex (its own named groups made plain), in routing
    order; the name of the group that matched says which template. Included routers are
    flattened (``iter_route_contexts``: their routes with the full path); a mount matches as
    ``<prefix>/{path}``."""
    parts: list[str] = []
    templates: list[str] = []
    entries: list[tuple[re.Pattern[str], str]] = []
    for context in iter_route_contexts(routes):
        regex = getattr(context, "path_regex", None)
        path = getattr(context, "path", None)
        methods = getattr(context, "methods", None)  # none: a mount, matched below
        if isinstance(regex, re.Pattern) and isinstance(path, str) and path and methods:
            entries.append((regex, path))
    entries += [
        (route.path_regex, f"{route.path}/{{path}}") for route in routes if isinstance(route, Mount)
    ]
    for regex, template in entries:
        body = _GROUP.sub("(?:", regex.pattern.lstrip("^").rstrip("$"))
        parts.append(f"(?P<r{len(templates)}>{body})$")
        templates.append(template)
    return re.compile("|".join(parts) or "(?!)"), templates
