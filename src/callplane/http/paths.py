"""Which route owns a request path, so every method of one path answers alike.

Routes are matched in order, the first that serves the method winning. Where a concrete path and
a templated one both match a URL (``/v1/data/tables/{id}`` and ``/v1/data/{table_name}/{id}``,
``tables`` being a reserved table name), that would let the templated route serve the methods the
concrete path lacks: ``PATCH /v1/data/tables/1`` became a record update of a table named
``tables`` and answered 422. As OpenAPI matches concrete paths before templated ones, the most
concrete path owns the URL here (compared segment by segment from the left, a literal segment
beats a parameter): another route matching it is not used (``shadowed``), and a 405 lists the
owner's methods (``allowed_methods``).

The table is built once per app from FastAPI's route contexts, on first use; a route that no
more concrete path can overlap (nearly all) costs one dictionary lookup per request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from fastapi.routing import iter_route_contexts
from starlette.routing import BaseRoute
from starlette.types import Scope

_PARAM = re.compile(r"\{[^}]*\}")


@dataclass(frozen=True)
class _Entry:
    path: str
    regex: re.Pattern[str]
    methods: frozenset[str]
    #: Per segment, 0 for a literal and 1 for a parameter: the smaller, the more concrete.
    rank: tuple[int, ...]


@dataclass
class PathTable:
    entries: list[_Entry] = field(default_factory=list)
    #: Per route object: the regexes of the more concrete paths that may cover its URLs.
    shadows: dict[int, list[re.Pattern[str]]] = field(default_factory=dict)

    def owner(self, path: str) -> str | None:
        best: _Entry | None = None
        for entry in self.entries:
            if entry.regex.match(path) and (best is None or entry.rank < best.rank):
                best = entry
        return best.path if best else None

    def allowed_methods(self, path: str) -> set[str]:
        owner = self.owner(path)
        return {
            m for e in self.entries if e.path == owner and e.regex.match(path) for m in e.methods
        }


def _overlap(a: str, b: str) -> bool:
    """Whether some URL could match both templates (segment by segment; no ``:path`` params)."""
    left, right = a.split("/"), b.split("/")
    return len(left) == len(right) and all(
        x == y or _PARAM.fullmatch(x) or _PARAM.fullmatch(y)
        for x, y in zip(left, right, strict=True)
    )


def _build(routes: list[BaseRoute]) -> PathTable:
    table = PathTable()
    contexts = []
    for context in iter_route_contexts(routes):
        path, methods, regex = context.path, context.methods, getattr(context, "path_regex", None)
        if not path or not methods or regex is None:
            continue  # mounts route on their own
        rank = tuple(1 if _PARAM.fullmatch(part) else 0 for part in path.split("/"))
        entry = _Entry(path, regex, frozenset(methods), rank)
        table.entries.append(entry)
        contexts.append((context.original_route, entry))
    for route, entry in contexts:
        shadows = list(
            {
                other.path: other.regex
                for other in table.entries
                if other.rank < entry.rank and _overlap(other.path, entry.path)
            }.values()
        )
        if shadows:
            table.shadows[id(route)] = shadows
    return table


def path_table(app: Any) -> PathTable:
    table: PathTable | None = getattr(app.state, "callplane_paths", None)
    if table is None:
        table = _build(app.router.routes)
        app.state.callplane_paths = table
    return table


def shadowed(app: Any, route: BaseRoute, path: str) -> bool:
    """Whether a more concrete path owns ``path``, so ``route`` must not serve it."""
    shadows = path_table(app).shadows.get(id(route))
    return bool(shadows) and any(regex.match(path) for regex in shadows or ())


def route_path(scope: Scope) -> str:
    """The path routes match against: the request path below the app's ``root_path``."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root + "/") else path
