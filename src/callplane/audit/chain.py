"""Appending to an organization's hash chain, in the transaction of the change it records.

Each event's ``hash`` is SHA-256 over the previous event's hash and the event's canonical JSON
(sorted keys, no spaces, UTF-8; ``at`` in UTC with microseconds). The chain's head row
(``audit_heads``) is bumped first: on PostgreSQL the row lock queues concurrent appends of one
organization until the first one's transaction ends, on SQLite the write lock does, so the chain
never forks and ``seq`` never skips. Statements run on the driver connection of whichever
transaction the request used (its session or one of its own, ``http.unit_of_work``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from callplane.kit.driver import Db, driver_of, fixed_statement
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


def canonical(event: Event, seq: int) -> str:
    return json.dumps(
        {
            "organization_id": event.organization_id,
            "seq": seq,
            "at": event.at.astimezone(UTC).isoformat(timespec="microseconds"),
            "actor": event.actor,
            "action": event.action,
            "resource_type": event.resource_type,
            "resource_id": event.resource_id,
            "ip": event.ip,
            "request_id": event.request_id,
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )


def chain_hash(previous: str, event: Event, seq: int) -> str:
    return hashlib.sha256((previous + canonical(event, seq)).encode()).hexdigest()


def _bump() -> sa.ClauseElement:
    heads = _HEADS
    return (
        sa.update(heads)
        .where(owned_by(heads, _org))
        .values(seq=heads.c.seq + 1)
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
    return sa.insert(_EVENTS).values(
        {column.name: sa.bindparam(column.name) for column in _EVENTS.c}
    )


def _seal() -> sa.ClauseElement:
    heads = _HEADS
    return sa.update(heads).where(owned_by(heads, _org)).values(hash=sa.bindparam("new_hash"))


async def append(db: Db, event: Event) -> int:
    """Append ``event`` to its organization's chain in ``db``'s transaction; its ``seq``."""
    driver = await driver_of(db)
    dialect = driver.dialect
    org = {"organization_id": event.organization_id}
    bump = fixed_statement("audit.bump", dialect, _bump)
    head = await driver.fetchone(bump, org)
    if head is None:  # the organization's first event
        name = dialect.name
        await driver.scalar(
            fixed_statement(f"audit.start.{name}", dialect, lambda: _start(name)), org
        )
        head = await driver.fetchone(bump, org)
        assert head is not None
    seq: int = head["seq"]
    digest = chain_hash(head["hash"], event, seq)
    row: dict[str, Any] = {
        "organization_id": event.organization_id,
        "seq": seq,
        "at": event.at,
        "actor": event.actor,
        "action": event.action,
        "resource_type": event.resource_type,
        "resource_id": event.resource_id,
        "ip": event.ip,
        "request_id": event.request_id,
        "hash": digest,
    }
    await driver.scalar(fixed_statement("audit.record", dialect, _record), row)
    await driver.scalar(fixed_statement("audit.seal", dialect, _seal), {**org, "new_hash": digest})
    return seq
