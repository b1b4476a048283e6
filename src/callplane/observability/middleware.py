"""HTTP metrics (pure ASGI, outermost but for the request id): each request counted by method,
route template and status, and timed.

The label is the route's template (``/v1/calls/{uuid}``), never the path itself, so ids in
URLs never become series. Routing records the route it chose in the scope: its full template
is then one dictionary lookup (included routers' routes mapped to their prefixed path once).
A request answered before routing (the fast paths of ``custom_data.hot`` and
``external_calls.hot``) is matched against the templates sharing its first two segments, so it
is labelled like the route it stands for; a mounted app's (the dashboard's) requests take the
route its router recorded; a path no route knows is ``unmatched``.

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

from callplane.kit import logcontext
from callplane.observability.metrics import http_duration, http_requests, method_label

UNMATCHED = "unmatched"
_GROUP = re.compile(r"\(\?P<[^>]+>")


class HttpMetrics:
    def __init__(self, app: ASGIApp, routes: list[BaseRoute]) -> None:
        self.app = app
        self._routes = routes
        self._table: _Templates | None = None
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
        if self._table is None:
            self._table = _Templates(self._routes)
        route = scope.get("route")
        root = scope.get("root_path")
        if root and isinstance(root, str):
            # A mounted app (the dashboard): its router recorded the route it chose.
            path = getattr(route, "path_format", None)
            if isinstance(path, str):
                return f"{root}{path}"
        if route is not None:
            known = self._table.by_route.get(id(route))
            if known is not None:
                return known
        return self._table.match(scope["path"])


class _Templates:
    """The app's route templates: by route object (what routing records in the scope; included
    routers' routes mapped to their full path), else by the path, matched against the
    templates sharing its first two segments (one combined regular expression each, their own
    named groups made plain) and then those starting with a parameter."""

    def __init__(self, routes: list[BaseRoute]) -> None:
        self.by_route: dict[int, str] = {}
        buckets: dict[str, list[tuple[re.Pattern[str], str]]] = {}
        for context in iter_route_contexts(routes):
            regex = getattr(context, "path_regex", None)
            path = getattr(context, "path", None)
            methods = getattr(context, "methods", None)  # none: a mount, matched below
            if not (isinstance(regex, re.Pattern) and isinstance(path, str) and path and methods):
                continue
            self.by_route.setdefault(id(getattr(context, "original_route", context)), path)
            buckets.setdefault(_key(path), []).append((regex, path))
        for route in routes:
            if isinstance(route, Mount):
                template = f"{route.path}/{{path}}"
                buckets.setdefault(_key(template), []).append((route.path_regex, template))
        self._buckets = {key: _combine(entries) for key, entries in buckets.items()}
        self._anywhere = self._buckets.pop("", None)

    def match(self, path: str) -> str:
        for table in (self._buckets.get(_key(path)), self._anywhere):
            if table is not None:
                found = table[0].match(path)
                if found is not None and found.lastgroup is not None:
                    return table[1][int(found.lastgroup[1:])]
        return UNMATCHED


def _key(path: str) -> str:
    """The first two segments of a path or template ("" when a parameter is among them)."""
    head = "/".join(path.split("/", 3)[:3])
    return "" if "{" in head else head


def _combine(entries: list[tuple[re.Pattern[str], str]]) -> tuple[re.Pattern[str], list[str]]:
    parts = [
        f"(?P<r{n}>{_GROUP.sub('(?:', regex.pattern.lstrip('^').rstrip('$'))})$"
        for n, (regex, _) in enumerate(entries)
    ]
    return re.compile("|".join(parts)), [template for _, template in entries]
