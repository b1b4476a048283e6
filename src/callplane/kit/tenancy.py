"""Tenancy in one place: every query on a tenant table starts here.

A *tenant table* is any table with an ``organization_id`` column: every model of ``models/``
but ``organizations``, and every custom-data table. Each statement that reads, changes or
deletes rows of one filters on the calling organization, and starts from this module::

    select_owned(Call, organization_id)              # SELECT calls.* … WHERE organization_id = ?
    select_owned(Call, organization_id, Call.id, Call.status)    # only some columns
    update_owned(Call, organization_id).where(Call.id == call_id).values(...)
    delete_owned(Call, organization_id).where(...)

A table joined to the first one, or a statement built once at import time with
``bindparam("org")``, takes its filter from ``owned_by(entity, organization_id)``; a join may
instead tie the joined table to one already filtered with ``same_organization(a, b)``.
``session.get(Model, (organization_id, id))`` is fine where the primary key starts with the
organization. INSERTs carry ``organization_id`` in their values (an ``INSERT … SELECT`` takes
its rows from a filtered SELECT).

The test suite fails any statement on a tenant table that lacks the filter
(``tests/tenancy_check.py``, installed for the whole run), so a new table or query is covered
without anyone remembering to. The few statements that legitimately span organizations
(authenticating an API key, the expired-contact purge, a worker claiming work of any
organization) say so, with the reason, through ``across_organizations(statement, reason)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.expression import Executable

#: An organization id, or a bound parameter standing for one in a statement built once.
Organization = int | sa.BindParameter[Any]

#: The execution option that marks a statement as deliberately spanning organizations.
ACROSS_ORGANIZATIONS = "callplane_across_organizations"

StatementT = TypeVar("StatementT", bound=Executable)


@dataclass(frozen=True, slots=True)
class Tenant:
    """Who is calling: the organization every query is scoped to, and the key used (with what it
    may do, ``kit.scopes``, and until when)."""

    organization_id: int
    api_key_id: int
    scopes: frozenset[str] = frozenset(("*",))
    expires_at: datetime | None = None


def organization_column(entity: Any) -> ColumnElement[Any]:
    """The ``organization_id`` column of a mapped class, ``aliased()`` entity or Core table."""
    columns = getattr(entity, "c", None)  # Table, Alias, Subquery
    column: ColumnElement[Any] = (
        columns.organization_id if columns is not None else entity.organization_id
    )
    return column


def owned_by(entity: Any, organization_id: Organization) -> ColumnElement[bool]:
    """``entity.organization_id = :organization_id``, for a WHERE or a join's ON clause."""
    return organization_column(entity) == organization_id


def same_organization(entity: Any, other: Any) -> ColumnElement[bool]:
    """Ties a joined table to one already filtered: ``a.organization_id = b.organization_id``."""
    return organization_column(entity) == organization_column(other)


def select_owned(entity: Any, organization_id: Organization, *columns: Any) -> sa.Select[Any]:
    """SELECT ``columns`` (default: the entity) from the organization's rows of ``entity``."""
    return sa.select(*(columns or (entity,))).where(owned_by(entity, organization_id))


def update_owned(entity: Any, organization_id: Organization) -> sa.Update:
    return sa.update(entity).where(owned_by(entity, organization_id))


def delete_owned(entity: Any, organization_id: Organization) -> sa.Delete:
    return sa.delete(entity).where(owned_by(entity, organization_id))


def across_organizations(statement: StatementT, reason: str) -> StatementT:
    """Mark a statement that must read or change rows of every organization; ``reason`` says
    why it is safe (it is what a reviewer and the tenancy check see)."""
    if not reason.strip():
        raise ValueError("a cross-organization statement needs a reason")
    return statement.execution_options(**{ACROSS_ORGANIZATIONS: reason})
