"""Writing an event in the transaction of the change it records, and what its hash covers.

An event's ``hash`` is the SHA-256 (hex) of the text: previous event's hash (hex; 64 zeros before
the first) + the event's ``seq`` in decimal + its canonical body, a JSON array of
organization_id, at (UTC, ISO 8601 with microseconds), actor, action, resource_type,
resource_id, ip and request_id, without spaces, UTF-8 (``body``, ``chain_hash``).

On PostgreSQL ``append`` only inserts the event, unsealed (no ``seq``, no ``hash``): one
statement that takes no lock but the row's own, so concurrent writes of one organization commit
side by side (numbering them in the transaction would hold the chain head's row lock until the
commit's flush, one write of the organization at a time). ``audit.seal`` numbers and hashes it
just after, in a transaction of its own.

On SQLite one write transaction runs at a time anyway, so sealing later would only add a second
write of the row and its indexes (and a writer that holds the lock while others wait): the
event is sealed as it is written. The head moves one event on in a statement that computes the
new hash in the database (``callplane_sha256``, ``kit.sqlite_functions``) and returns it, then
the event is inserted with its number and hash.

Statements run on the driver connection of whichever transaction the request used (its session
or one of its own, ``http.unit_of_work``).

What an append costs a write is measured by ``bench/audit_cost.py`` (``docs/privacy.md``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

import orjson
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from callplane.kit.driver import Db, driver_of, fixed_statement
from callplane.kit.tenancy import owned_by
from callplane.models.audit import AuditEvent, AuditHead

#: The hash the first event of every chain follows.
GENESIS = "0" * 64

_EVENTS = cast(sa.Table, AuditEvent.__table__)
_HEADS = cast(sa.Table, AuditHead.__table__)
_org: sa.BindParameter[int] = sa.bindparam("organization_id")
#: The event's own values; ``id`` comes from the database, ``seq`` and ``hash`` from sealing.
FIELDS = (
    "organization_id",
    "at",
    "actor",
    "action",
    "resource_type",
    "resource_id",
    "ip",
    "request_id",
)


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
    """The hash of ``event`` as number ``seq`` after ``previous`` (sealing, and ``verify``)."""
    return hashlib.sha256(f"{previous}{seq}{body(event)}".encode()).hexdigest()


def _record() -> sa.ClauseElement:
    return sa.insert(_EVENTS).values({name: sa.bindparam(name) for name in FIELDS})


def _record_sealed() -> sa.ClauseElement:
    names = (*FIELDS, "seq", "hash")
    return sa.insert(_EVENTS).values({name: sa.bindparam(name) for name in names})


def _advance() -> sa.Update:
    """SQLite: move the head one event on; its new seq and hash (over the old hash, the new
    seq and the body)."""
    following = _HEADS.c.seq + 1
    text = _HEADS.c.hash.concat(sa.cast(following, sa.Text)).concat(
        sa.bindparam("body", type_=sa.Text)
    )
    return (
        sa.update(_HEADS)
        .where(owned_by(_HEADS, _org))
        .values(seq=following, hash=sa.func.callplane_sha256(text))
        .returning(_HEADS.c.seq, _HEADS.c.hash)
    )


def _start() -> sa.ClauseElement:
    return (
        sqlite.insert(_HEADS)
        .values(organization_id=_org, seq=0, hash=GENESIS)
        .on_conflict_do_nothing(index_elements=["organization_id"])
    )


async def append(db: Db, event: Event) -> None:
    """Write ``event`` in ``db``'s transaction: unsealed on PostgreSQL, sealed on SQLite."""
    driver = await driver_of(db)
    dialect = driver.dialect
    values: dict[str, Any] = {name: getattr(event, name) for name in FIELDS}
    if dialect.name != "sqlite":
        await driver.scalar(fixed_statement("audit.record", dialect, _record), values)
        return
    values["body"] = body(event)
    advance = fixed_statement("audit.advance.sqlite", dialect, _advance)
    head = await driver.fetchone(advance, values)
    if head is None:  # the organization's first event
        await driver.scalar(fixed_statement("audit.start.sqlite", dialect, _start), values)
        head = await driver.fetchone(advance, values)
        assert head is not None
    values["seq"], values["hash"] = head["seq"], head["hash"]
    await driver.scalar(fixed_statement("audit.record.sqlite", dialect, _record_sealed), values)
