"""Imports point one way (STYLE: router → service → models): nothing below ``http/`` imports from
it, and ``runtime.py``, held by every layer, imports no feature package. A static read of the
source, so it costs no database."""

from __future__ import annotations

import ast
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
    return parts[-1] not in ("router.py", "find_router.py", "fast.py", "app.py", "server.py")


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
