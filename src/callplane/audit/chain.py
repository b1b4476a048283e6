"""Appending to an organization's hash chain, in the transaction of the change it records.

An event's ``hash`` is the SHA-256 (hex) of the text: previous event's hash (hex; 64 zeros before
the first) + the event's ``seq`` in decimal + its canonical body, a JSON array of
organization_id, at (UTC, ISO 8601 with microseconds), actor, action, resource_type,
resource_id, ip and request_id, without spaces, UTF-8 (``body``, ``chain_hash``).

The chain's head row (``audit_heads``: the last seq and hash) moves forward in a statement that
also computes the new hash in the database, and the event is inserted from what it returns. On
PostgreSQL that is one statement, the head's UPDATE in a ``WITH`` of the event's INSERT: one
round trip. SQLite has no UPDATE in ``WITH``, and a statement there costs no round trip: the
head's UPDATE, then the event's INSERT. On PostgreSQL the head's row lock queues concurrent
appends of one organization until the first one's transaction ends (a queued UPDATE then reads
the head the first one committed), on SQLite the write lock does: the chain never forks and
``seq`` never skips. Statements run on the driver connection of whichever transaction the
request used (its session or one of its own, ``http.unit_of_work``).

What an append costs a write is measured by ``bench/audit_cost.py`` (``docs/privacy.md``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

import orjson
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.elements import ColumnElement

from callplane.kit.driver import Db, Prepared, driver_of, fixed_statement
from callplane.kit.tenancy import owned_by
from callplane.models.audit import AuditEvent, AuditHead

#: The hash the first event of every chain follows.
GENESIS = "0" * 64

_org: sa.BindParameter[int] = sa.bindparam("organization_id")
_HEADS = cast(sa.Table, AuditHead.__table__)
_EVENTS = cast(sa.Table, AuditEvent.__table__)


@dataclass(frozen=True, slots=True)
class Event:
    organization_id: int
    at: datetime
    actor: str
    action: str
    resource_type: str
    resource_id: str | None = None
    ip: str | None = None
    request_id: str | None = None


def body(event: Event) -> str:
    return orjson.dumps(
        [
            event.organization_id,
            event.at.astimezone(UTC).isoformat(timespec="microseconds"),
            event.actor,
            event.action,
            event.resource_type,
            event.resource_id,
            event.ip,
            event.request_id,
        ]
    ).decode()


def chain_hash(previous: str, event: Event, seq: int) -> str:
    """What the database computes on append, recomputed (``audit.verify``)."""
    return hashlib.sha256(f"{previous}{seq}{body(event)}".encode()).hexdigest()


def _sha256_hex(text: ColumnElement[Any], dialect_name: str) -> ColumnElement[Any]:
    if dialect_name == "postgresql":
        return sa.func.encode(sa.func.sha256(sa.func.convert_to(text, "UTF8")), "hex")
    return sa.func.callplane_sha256(text)  # kit.sqlite_functions


def _advance(dialect_name: str) -> sa.Update:
    """Move the head one event on: its new seq and hash (the old hash, the new seq, the body)."""
    heads = _HEADS
    following = heads.c.seq + 1
    text = heads.c.hash.concat(sa.cast(following, sa.Text)).concat(
        sa.bindparam("body", type_=sa.Text)
    )
    return (
        sa.update(heads)
        .where(owned_by(heads, _org))
        .values(seq=following, hash=_sha256_hex(text, dialect_name))
        .returning(heads.c.seq, heads.c.hash)
    )


def _start(dialect_name: str) -> sa.ClauseElement:
    insert = postgresql.insert if dialect_name == "postgresql" else sqlite.insert
    return (
        insert(_HEADS)
        .values(organization_id=_org, seq=0, hash=GENESIS)
        .on_conflict_do_nothing(index_elements=["organization_id"])
    )


def _record() -> sa.ClauseElement:
    return sa.insert(_EVENTS).values({c.name: sa.bindparam(c.name) for c in _EVENTS.c})


#: The event's own values, bound as they are (the head gives ``seq`` and ``hash``).
_FIELDS = ("at", "actor", "action", "resource_type", "resource_id", "ip", "request_id")


def _advance_and_record() -> sa.ClauseElement:
    """PostgreSQL: the head moves and the event is inserted from what it returns, in one
    statement; no row when the organization has no head yet."""
    head = _advance("postgresql").cte("head")
    fields = [sa.bindparam(name, type_=_EVENTS.c[name].type) for name in _FIELDS]
    values = sa.select(_org, head.c.seq, *fields, head.c.hash)
    columns = ["organization_id", "seq", *_FIELDS, "hash"]
    return (
        sa.insert(_EVENTS)
        .from_select(columns, values)
        .add_cte(head)
        .returning(_EVENTS.c.seq, _EVENTS.c.hash)
    )


#: Per dialect class: the head's start, its move (with the event's INSERT on PostgreSQL), and
#: the event's INSERT where that is a statement of its own (SQLite).
_statements: dict[type[Dialect], tuple[Prepared, Prepared, Prepared | None]] = {}


def _statements_for(dialect: Dialect) -> tuple[Prepared, Prepared, Prepared | None]:
    found = _statements.get(type(dialect))
    if found is not None:
        return found
    name = dialect.name
    start = fixed_statement(f"audit.start.{name}", dialect, lambda: _start(name))
    if name == "postgresql":
        both = fixed_statement("audit.append.postgresql", dialect, _advance_and_record)
        found = (start, both, None)
    else:
        advance = fixed_statement(f"audit.advance.{name}", dialect, lambda: _advance(name))
        found = (start, advance, fixed_statement("audit.record", dialect, _record))
    _statements[type(dialect)] = found
    return found


async def append(db: Db, event: Event) -> int:
    """Append ``event`` to its organization's chain in ``db``'s transaction; its ``seq``."""
    driver = await driver_of(db)
    start, advance, record = _statements_for(driver.dialect)
    values: dict[str, Any] = {
        "organization_id": event.organization_id,
        "body": body(event),
        "at": event.at,
        "actor": event.actor,
        "action": event.action,
        "resource_type": event.resource_type,
        "resource_id": event.resource_id,
        "ip": event.ip,
        "request_id": event.request_id,
    }
    head = await driver.fetchone(advance, values)
    if head is None:  # the organization's first event
        await driver.scalar(start, values)
        head = await driver.fetchone(advance, values)
        assert head is not None
    if record is not None:
        values["seq"], values["hash"] = head["seq"], head["hash"]
        await driver.scalar(record, values)
    seq: int = head["seq"]
    return seq
