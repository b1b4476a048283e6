"""Writing an event in the transaction of the change it records, and what its hash covers.

An event's ``hash`` is the SHA-256 (hex) of the text: previous event's hash (hex; 64 zeros before
the first) + the event's ``seq`` in decimal + its canonical body, a JSON array of
organization_id, at (UTC, ISO 8601 with microseconds), actor, action, resource_type,
resource_id, ip and request_id, without spaces, UTF-8 (``hash_of``).

``append`` inserts the event as one pending row (``AuditPending``), the same on both databases:
one statement that takes no lock but the row's own and touches no index but the key, so a change
pays for its event about what it pays for a row of a table without indexes. ``audit.seal``
numbers, hashes and moves it into the chain just after, in a transaction of its own: many events
at once, so the chain's key and indexes are written once per batch rather than once per change.

The statement runs on the driver connection of whichever transaction the request used (its
session or one of its own, ``http.unit_of_work``). What an append costs a write is measured by
``bench/audit_cost.py`` (``docs/privacy.md``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

import orjson
import sqlalchemy as sa

from callplane.kit.driver import Db, at_commit_statement, driver_of
from callplane.models.audit import AuditPending

#: The hash the first event of every chain follows.
GENESIS = "0" * 64

_PENDING = cast(sa.Table, AuditPending.__table__)
#: The event's own values; ``seq`` and ``hash`` come from sealing.
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

_AT = FIELDS.index("at")
#: How SQLite stores a timestamp: ``YYYY-MM-DD HH:MM:SS.ffffff``, naive UTC.
_STORED_LENGTH = 26


@dataclass(slots=True)  # not frozen: a frozen dataclass costs a request several µs to build
class Event:
    organization_id: int
    at: datetime
    actor: str
    action: str
    resource_type: str
    resource_id: str | None = None
    ip: str | None = None
    request_id: str | None = None


def utc_text(at: datetime | str) -> str:
    """``at`` as the body writes it; SQLite's driver reads a timestamp as its stored text,
    naive UTC."""
    if isinstance(at, str) and len(at) == _STORED_LENGTH and at[10] == " ":
        # SQLite's stored form, always with microseconds: rewritten as text, sealing pays
        # 0.15 µs an event instead of 1.5 µs to parse and print it.
        return f"{at[:10]}T{at[11:]}+00:00"
    moment = at if isinstance(at, datetime) else datetime.fromisoformat(at)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def stored_text(at: datetime) -> str:
    """``at`` as SQLite stores a timestamp (``_STORED_LENGTH``): naive UTC, always with
    microseconds, the form the column's types write."""
    if at.tzinfo is not None and at.tzinfo is not UTC:
        at = at.astimezone(UTC)
    return at.replace(tzinfo=None).isoformat(" ", "microseconds")


def hash_of(previous: str, seq: int, values: Sequence[Any]) -> str:
    """The hash of the event whose ``FIELDS`` are ``values`` (``at`` as ``utc_text``), as
    number ``seq`` after ``previous``."""
    body = orjson.dumps(values if isinstance(values, list) else list(values))
    return hashlib.sha256(b"%s%d%s" % (previous.encode(), seq, body)).hexdigest()


def chain_hash(previous: str, event: Event, seq: int) -> str:
    """The hash of ``event`` as number ``seq`` after ``previous`` (``verify``)."""
    values = [getattr(event, name) for name in FIELDS]
    values[_AT] = utc_text(event.at)
    return hash_of(previous, seq, values)


def _record() -> sa.ClauseElement:
    # inline(): nothing comes back, so the insert can go with the COMMIT (``run_at_commit``).
    return sa.insert(_PENDING).inline().values({name: sa.bindparam(name) for name in FIELDS})


_record_for = at_commit_statement("audit.record", _record)


async def append(db: Db, event: Event) -> None:
    """Write ``event`` in ``db``'s transaction, pending until it is sealed: the transaction's
    last statement, so on PostgreSQL it goes with the COMMIT where the transaction is the
    request's own (``kit.driver.run_at_commit``), costing no round trip of its own."""
    driver = await driver_of(db)
    actor, resource_id = event.actor, event.resource_id
    # PostgreSQL text cannot hold NUL: kept visible, and the same on both databases.
    if "\x00" in actor:
        actor = actor.replace("\x00", "\ufffd")
    if resource_id is not None and "\x00" in resource_id:
        resource_id = resource_id.replace("\x00", "\ufffd")
    row: list[Any] = [  # FIELDS
        event.organization_id,
        event.at,
        actor,
        event.action,
        event.resource_type,
        resource_id,
        event.ip,
        event.request_id,
    ]
    record = _record_for(driver.dialect)
    if driver.dialect.name == "sqlite":
        # The row in the driver's own form, in FIELDS order (the statement's): the timestamp's
        # conversions through its column types cost more than the insert itself.
        row[_AT] = stored_text(event.at)
        await driver.execute_raw(record, row)
    else:
        await driver.run_at_commit(record, dict(zip(FIELDS, row, strict=True)))
