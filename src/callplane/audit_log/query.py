"""Which index serves each filter of ``GET /audit_log``, on both databases.

``actor`` and ``action`` are served by their indexes in ``seq`` order, ``since``/``until`` by
``at``'s. ``resource_id``'s index is kept by run of numbers (``RESOURCE_RUN_EVENTS``), then
resource, then ``seq``: a query names every run of the organization's chain, newest first, and
reads that index in its own order, which is ``seq`` descending. SQLite's planner, without
statistics, would rather walk the key or a range of ``at``; its other filters are written so no
index serves them (a unary ``+``), and it counts through the ordered query.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.sql import operators
from sqlalchemy.sql.elements import UnaryExpression

from callplane.kit.tenancy import select_owned
from callplane.models.audit import RESOURCE_RUN_EVENTS, AuditEvent, resource_run

_NOT_INDEXED: operators.custom_op[Any] = operators.custom_op("+")


def _unindexed(column: Any, sqlite: bool) -> Any:
    return UnaryExpression(column, operator=_NOT_INDEXED) if sqlite else column


def filtered(
    organization_id: int,
    *,
    sqlite: bool,
    newest_seq: int,
    actor: str | None,
    action: str | None,
    resource_id: str | None,
    since: datetime | None,
    until: datetime | None,
) -> tuple[sa.Select[Any], tuple[Any, ...], bool]:
    """The organization's events that pass the filters, the order to read them newest first in,
    and whether the count must be taken in that order (the resource filter's index)."""
    by_resource = resource_id is not None
    plain = sqlite and by_resource
    query = select_owned(AuditEvent, organization_id)
    for column, value in ((AuditEvent.actor, actor), (AuditEvent.action, action)):
        if value is not None:
            query = query.where(_unindexed(column, plain) == value)
    if since is not None:
        query = query.where(_unindexed(AuditEvent.at, plain) >= since)
    if until is not None:
        query = query.where(_unindexed(AuditEvent.at, plain) < until)
    if not by_resource:
        return query, (AuditEvent.seq.desc(),), False
    runs = list(range(newest_seq // RESOURCE_RUN_EVENTS, -1, -1))
    # PostgreSQL takes the runs as one array: a parameter each would cap a chain at 32,767 runs.
    in_runs = (
        resource_run.in_(runs)
        if sqlite
        else resource_run == sa.any_(sa.bindparam("runs", runs, type_=ARRAY(sa.Integer())))
    )
    query = query.where(in_runs, AuditEvent.resource_id == resource_id)
    return query, (resource_run.desc(), AuditEvent.resource_id.desc(), AuditEvent.seq.desc()), True
