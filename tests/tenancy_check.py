"""The tenancy check: every statement on a tenant table filters on the organization.

Installed for the whole test run (``tests/conftest.py``): a ``before_execute`` hook on every
engine looks at each statement the code runs — ORM or Core, request path, CLI, loader, worker —
and records a violation when a table with an ``organization_id`` column is read, changed or
deleted without being *anchored*:

- ``X.organization_id = <a value or bound parameter>`` in the statement's conjunctive WHERE or in
  a join's ON clause anchors X, and
- ``X.organization_id = Y.organization_id`` there anchors X once Y is anchored.

Only the code under test is checked, not a test's own inspection of the database: the check
applies inside every request to an app built by ``make_app`` (``CheckedScope``), inside that
app's lifespan (so background tasks it starts are checked too) and inside the factories that
call services directly (``checked()``).

It knows no table by name, so the tables and queries other parts of the code add are covered as
soon as they run under a test. INSERTs carry the organization in their values and are not
checked (an ``INSERT … SELECT`` has its SELECT checked); neither are the ORM's own flushes,
which write back objects that were loaded by checked statements or added by the code. Raw
``text()`` (DDL, pragmas) is not checked. A statement marked with
``callplane.kit.tenancy.across_organizations(stmt, reason)`` is allowed: that is the one documented
escape, for statements that must span organizations.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session
from sqlalchemy.sql import operators, visitors
from sqlalchemy.sql.dml import Delete, Update
from sqlalchemy.sql.elements import (
    BinaryExpression,
    BindParameter,
    BooleanClauseList,
    ColumnClause,
    Grouping,
    Null,
)
from sqlalchemy.sql.selectable import (
    CTE,
    Alias,
    FromClause,
    Join,
    Select,
    Subquery,
    TableClause,
)
from starlette.types import ASGIApp, Receive, Scope, Send

from callplane.kit import driver
from callplane.kit.tenancy import ACROSS_ORGANIZATIONS

ORG = "organization_id"

_checked: ContextVar[bool] = ContextVar("tenancy_checked", default=False)
_flushing: ContextVar[bool] = ContextVar("tenancy_flushing", default=False)

#: Violations seen since the last ``take_violations()``: (statement text, unanchored tables).
_violations: list[tuple[str, list[str]]] = []


def _key(obj: Any) -> Any:
    deannotate = getattr(obj, "_deannotate", None)
    return deannotate() if deannotate is not None else obj


def _is_tenant(from_: FromClause) -> bool:
    if isinstance(from_, Subquery | CTE):
        return False  # its own SELECT is checked where it is defined
    if isinstance(from_, Alias | TableClause):
        return ORG in from_.c
    return False


def _expand(from_: FromClause, tables: list[FromClause], conditions: list[Any]) -> None:
    if isinstance(from_, Join):
        _expand(from_.left, tables, conditions)
        _expand(from_.right, tables, conditions)
        if from_.onclause is not None:
            conditions.append(from_.onclause)
    else:
        tables.append(from_)


def _conjuncts(clause: Any) -> Iterator[Any]:
    if clause is None:
        return
    if isinstance(clause, Grouping):
        yield from _conjuncts(clause.element)
    elif isinstance(clause, BooleanClauseList) and clause.operator is operators.and_:
        for part in clause.clauses:
            yield from _conjuncts(part)
    else:
        yield clause


def _org_owner(side: Any) -> Any:
    """The from-object whose organization_id ``side`` is, or None."""
    if isinstance(side, ColumnClause) and side.name == ORG and side.table is not None:
        return _key(side.table)
    return None


def _is_value(side: Any) -> bool:
    return isinstance(side, BindParameter) and not isinstance(side, Null)


def _unanchored(tables: list[FromClause], conditions: list[Any]) -> list[str]:
    tenant = {_key(t): t for t in tables if _is_tenant(t)}
    if not tenant:
        return []
    anchored: set[Any] = set()
    links: list[tuple[Any, Any]] = []
    for condition in conditions:
        for part in _conjuncts(condition):
            if not isinstance(part, BinaryExpression) or part.operator is not operator.eq:
                continue
            left, right = _org_owner(part.left), _org_owner(part.right)
            if left is not None and right is not None:
                links.append((left, right))
            elif left is not None and _is_value(part.right):
                anchored.add(left)
            elif right is not None and _is_value(part.left):
                anchored.add(right)
    changed = True
    while changed:
        changed = False
        for a, b in links:
            if (a in anchored) != (b in anchored):
                anchored.update((a, b))
                changed = True
    return [str(getattr(t, "name", t)) for k, t in tenant.items() if k not in anchored]


def _check_one(element: Any) -> list[str]:
    tables: list[FromClause] = []
    conditions: list[Any] = []
    if isinstance(element, Select):
        for from_ in element.get_final_froms():
            _expand(from_, tables, conditions)
        conditions.append(element.whereclause)
    elif isinstance(element, Update | Delete):
        _expand(element.table, tables, conditions)
        conditions.append(element.whereclause)
    else:
        return []
    return _unanchored(tables, conditions)


def check_statement(statement: Any) -> list[str]:
    """Names of the tenant tables ``statement`` touches without the organization filter."""
    if statement.get_execution_options().get(ACROSS_ORGANIZATIONS):
        return []
    missing: list[str] = []
    for element in visitors.iterate(statement):
        missing.extend(_check_one(element))
    return missing


def _before_execute(
    _conn: Any, clauseelement: Any, _multiparams: Any, _params: Any, execution_options: Any
) -> None:
    _check(clauseelement, execution_options)


def _on_driver_compile(statement: Any) -> None:
    """Statements of the driver path (``callplane.kit.driver``), checked when compiled; a
    statement's shape, which is all the check looks at, never changes after that."""
    _check(statement, statement.get_execution_options())


def _check(clauseelement: Any, execution_options: Any) -> None:
    if not _checked.get() or _flushing.get() or execution_options.get(ACROSS_ORGANIZATIONS):
        return
    if not isinstance(clauseelement, Select | Update | Delete) and not hasattr(
        clauseelement, "select"
    ):
        return
    try:
        missing = check_statement(clauseelement)
    except Exception as exc:  # the check must never break the code it watches
        _violations.append((repr(clauseelement), [f"tenancy check failed: {exc!r}"]))
        return
    if missing:
        _violations.append((str(clauseelement), missing))


def _flush_starts(*_args: Any) -> None:
    _flushing.set(True)


def _flush_ends(*_args: Any) -> None:
    _flushing.set(False)


def install() -> None:
    event.listen(Engine, "before_execute", _before_execute)
    driver.compile_observers.append(_on_driver_compile)
    event.listen(Session, "before_flush", _flush_starts)
    event.listen(Session, "after_flush_postexec", _flush_ends)
    event.listen(Session, "after_soft_rollback", _flush_ends)  # a flush that failed


def take_violations() -> list[tuple[str, list[str]]]:
    found = list(_violations)
    _violations.clear()
    return found


@contextmanager
def checked() -> Iterator[None]:
    token = _checked.set(True)
    try:
        yield
    finally:
        _checked.reset(token)


class CheckedScope:
    """ASGI middleware: every statement run while handling a request is checked."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with checked():
            await self.app(scope, receive, send)
