"""Imports point one way (STYLE: router → service → models): the top-level modules stand on
floors and import only from below (``FLOORS``), nothing below ``http/`` imports from it, and
``runtime.py``, held by every layer, imports no feature package. A static read of the source, so
it costs no database."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import callplane

PACKAGE = Path(callplane.__file__).parent

#: What ``Runtime`` may be built from: infrastructure, never a router or the web layer. The
#: custom-data catalog is the one feature module: it is the per-process cache Runtime owns, and
#: it imports only that domain's schema code (checked below like every module under http/).
RUNTIME_MAY_IMPORT = {
    "callplane.custom_data.catalog",
    "callplane.kit.db",
    "callplane.kit.driver",
    "callplane.kit.keycache",
    "callplane.media.signing",
    "callplane.media.storage",
    "callplane.ratelimit",
    "callplane.settings",
}


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {n for n in names if n == "callplane" or n.startswith("callplane.")}


def _below_http(path: Path) -> bool:
    """Modules that serve the web layer rather than sit on it: services, schemas, models and the
    package's own infrastructure (routers, fast paths such as ``custom_data/fast.py``, the
    dashboard, the CLI and app assembly sit above)."""
    parts = path.relative_to(PACKAGE).parts
    if parts[0] in ("http", "dashboard", "cli", "engine", "migrations"):
        return False
    return parts[-1] not in (
        "router.py",
        "find_router.py",
        "fast.py",
        "api.py",
        "app.py",
        "server.py",
    )


def test_nothing_below_http_imports_from_it() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(
            name for name in _imports(path) if name.startswith("callplane.http")
        )
        for path in PACKAGE.rglob("*.py")
        if _below_http(path)
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_runtime_imports_only_infrastructure() -> None:
    assert _imports(PACKAGE / "runtime.py") <= RUNTIME_MAY_IMPORT


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package is its ``__init__``)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports: every import statement anywhere in the file
    (top level, inside functions, under ``if TYPE_CHECKING``), relative ones resolved. ``from
    package import name`` is an edge to the submodule when ``name`` is one, else to the package
    (whose ``__init__`` runs either way and is a module of its own here)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: list[str] = []
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.append(full if full in modules else base)
            elif isinstance(node, ast.Import):
                targets.extend(alias.name for alias in node.names)
        edges = set()
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_import_graph_has_no_cycle_lazy_and_type_checking_imports_included() -> None:
    assert _cycles(_import_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_only_cli_and_app_import_the_engine() -> None:
    def allowed(module: str) -> bool:
        return module.startswith(("callplane.engine", "callplane.cli")) or module in (
            "callplane.app",
        )

    importers = {
        module
        for module, targets in _import_graph().items()
        if any(t == "callplane.engine" or t.startswith("callplane.engine.") for t in targets)
    }
    assert sorted(m for m in importers if not allowed(m)) == []


#: The floors of the house, from the ground up: a top-level module or package imports only from
#: floors below its own (docs/development.md draws them). A new top-level package takes its place
#: here; an arrow that must run up or sideways is named in ``UPWARD``, with why.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("errors", "models", "settings", "privacy"),
    ("kit", "ratelimit", "brain", "telephony"),
    ("speech", "deployment", "fixtures"),
    ("media", "migrate"),
    ("runtime",),
    ("audit",),
    ("http", "observability", "jobs"),
    ("call_tags", "contacts", "custom_data", "recordings", "voices", "webhooks", "server"),
    ("knowledge",),
    ("external_calls", "tools", "migrations"),
    ("agents",),
    ("campaigns", "agent_tests"),
    ("calls", "phone_numbers", "orgs", "suppressions", "audit_log"),
    ("feedback", "web_calls", "users"),
    ("api", "dashboard", "engine", "loader"),
    ("app", "demo"),
    ("cli",),
)

#: The arrows that run up, module -> module, and why each is allowed to.
UPWARD = {
    # The speech engine setting is parsed by the engines' own table.
    ("callplane.settings", "callplane.speech.engines"),
    # A phone line carries audio in the speech layer's types; the simulated line speaks with a
    # real synthesizer.
    ("callplane.telephony.base", "callplane.speech.base"),
    ("callplane.telephony.simulated", "callplane.speech.base"),
    ("callplane.telephony.simulated", "callplane.speech.synthesis"),
    # SIP and RTP count what they see: the metrics hooks are one line each.
    ("callplane.telephony.media", "callplane.observability.metrics"),
    ("callplane.telephony.sip", "callplane.observability.metrics"),
    # The per-process custom-data catalog is Runtime's own cache (see RUNTIME_MAY_IMPORT).
    ("callplane.runtime", "callplane.custom_data.catalog"),
    # A merge asks the agent's tests whether it may go ahead (the merge gate): the one arrow from
    # agents into the tests that are built on agents.
    ("callplane.agents.branches", "callplane.agent_tests.gate"),
    # The opt_out tool puts the caller's number on the do-not-call list, whose rules are the
    # campaigns' (it is their list first).
    ("callplane.tools.opt_out", "callplane.campaigns.donotcall"),
    # An API key is resolved to its organization by the organizations' service.
    ("callplane.http.auth", "callplane.orgs.service"),
}


def _floor_of() -> dict[str, int]:
    return {unit: level for level, units in enumerate(FLOORS) for unit in units}


def _unit(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_top_level_module_has_a_floor() -> None:
    floor = _floor_of()
    units = {unit for module in _modules() if (unit := _unit(module)) is not None}
    assert sorted(units - floor.keys()) == [], "place each new top-level module in FLOORS"
    assert sorted(floor.keys() - units) == [], "a module in FLOORS no longer exists"


def test_imports_run_down_the_floors() -> None:
    floor = _floor_of()
    upward = sorted(
        (module, target)
        for module, targets in _import_graph().items()
        for target in targets
        if (here := _unit(module)) is not None
        and (there := _unit(target)) is not None
        and here != there
        and floor.get(there, -1) >= floor.get(here, len(FLOORS))
        and (module, target) not in UPWARD
    )
    assert upward == [], "import from a lower floor, or name the arrow in UPWARD with why"


def test_the_map_in_the_docs_draws_these_floors() -> None:
    """docs/development.md's map of the house is FLOORS, top floor first."""
    page = (Path(__file__).parents[1] / "docs" / "development.md").read_text()
    rows = re.findall(r"^\| (\d+) \| ((?:`[\w.]+/?`(?:, )?)+) \|", page, re.MULTILINE)
    drawn = {
        int(floor): sorted(name.strip("`/").removesuffix(".py") for name in cells.split(", "))
        for floor, cells in rows
    }
    pinned = {level: sorted(units) for level, units in enumerate(FLOORS, 1)}
    assert drawn == pinned, "update the map in docs/development.md"
