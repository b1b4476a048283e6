"""Contact data rules and queries (SPEC PUT /contacts/{phoneNumber}/data;
docs/api-contract.md#contact-data).

Every rule that must hold under concurrency is one statement:
- PUT is one ``INSERT … ON CONFLICT (organization_id, identifier) DO UPDATE … RETURNING`` whose
  update adds 1 to the stored revision, so N concurrent PUTs get n+1 … n+N, each once (PostgreSQL
  serializes them on the row lock; SQLite write requests already hold the write lock).
- ``expectedRevision`` is a condition of that same statement (the DO UPDATE's ``WHERE``, or a
  conditional ``UPDATE`` when a revision > 0 is expected), never a read followed by a write.
- DELETE and the purge clear data with a conditional ``UPDATE``; the row and its revision stay.

"Stored revision" for ``expectedRevision`` is the revision of the data a GET would return, and 0
when there is none (never written, deleted or expired): ``expectedRevision: 0`` therefore means
"create only if absent", while the counter itself keeps growing (the next write after a delete
still gets the next revision).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

import orjson
from sqlalchemy import ColumnElement, Row, Table, and_, bindparam, or_, select, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.errors import Conflict, InvalidInput, NotFound
from callplane.kit.driver import DriverConnection, Prepared, driver_connection, fixed_statement
from callplane.kit.pagination import count, offset
from callplane.kit.tenancy import across_organizations, owned_by, select_owned
from callplane.models.base import UTCDateTime, utcnow
from callplane.models.contacts import Contact

DATA_MAX_BYTES = 65_536
TTL_MIN_SECONDS = 60
TTL_MAX_SECONDS = 7_776_000  # 90 days
#: The revision column is a 32-bit integer; larger expected values can never match.
REVISION_MAX = 2_147_483_647

_contacts = cast(Table, Contact.__table__)
_c = _contacts.c


@dataclass(frozen=True, slots=True)
class ContactWrite:
    """A validated PUT body: ``data`` already serialized compactly (what is stored)."""

    data_json: str
    ttl_seconds: int | None
    expected_revision: int | None


@dataclass(frozen=True, slots=True)
class StoredData:
    identifier: str
    data_json: str
    revision: int
    expires_at: datetime | None


# --- body rules -------------------------------------------------------------------------------


def _integer(value: object, field: str) -> int:
    """An integer as JSON means it: ``60`` or ``60.0`` (JSON Schema's "integer", a number with
    no fractional part); not ``true``, not ``60.5``, not ``"60"``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput("must be an integer", loc=("body", field), type_="int_type")
    if isinstance(value, float):
        if not value.is_integer():
            raise InvalidInput("must be an integer", loc=("body", field), type_="int_from_float")
        return int(value)
    return value


def compact_json(data: dict[str, Any]) -> str:
    """Compact JSON text, non-ASCII characters kept as they are (the size rule of
    docs/api-contract.md#contact-data)."""
    try:
        return orjson.dumps(data).decode("utf-8")
    except orjson.JSONEncodeError:
        pass  # integers beyond 64 bits: the slower exact path (depth is bounded by the policy)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def parse_write(body: object) -> ContactWrite:
    if not isinstance(body, dict):
        raise InvalidInput("Request body must be a JSON object", loc=("body",), type_="dict_type")
    if "data" not in body:
        raise InvalidInput("is required", loc=("body", "data"), type_="missing")
    data = body["data"]
    if not isinstance(data, dict):
        raise InvalidInput("must be a JSON object", loc=("body", "data"), type_="dict_type")
    data_json = compact_json(data)
    if _utf8_size(data_json) > DATA_MAX_BYTES:
        raise InvalidInput(
            f"serialized size must be at most {DATA_MAX_BYTES} bytes",
            loc=("body", "data"),
            type_="too_long",
        )

    ttl_seconds = None
    if body.get("ttlSeconds") is not None:
        ttl_seconds = _integer(body["ttlSeconds"], "ttlSeconds")
        if not TTL_MIN_SECONDS <= ttl_seconds <= TTL_MAX_SECONDS:
            raise InvalidInput(
                f"must be from {TTL_MIN_SECONDS} to {TTL_MAX_SECONDS} seconds",
                loc=("body", "ttlSeconds"),
                type_="range",
            )

    expected_revision = None
    if body.get("expectedRevision") is not None:
        expected_revision = _integer(body["expectedRevision"], "expectedRevision")
        if not 0 <= expected_revision <= REVISION_MAX:
            raise InvalidInput(
                f"must be from 0 to {REVISION_MAX}", loc=("body", "expectedRevision"), type_="range"
            )
    return ContactWrite(data_json, ttl_seconds, expected_revision)


def _utf8_size(text: str) -> int:
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate sent as "\ud800": not storable text
        raise InvalidInput(
            "contains an invalid unicode escape", loc=("body", "data"), type_="string_unicode"
        ) from None


# --- queries ----------------------------------------------------------------------------------
#
# The statements of the per-request paths are built once, with bound parameters, so a request
# only binds values (building SQLAlchemy expressions costs more than running the query here).


def _live(now: Any) -> ColumnElement[bool]:
    """Data a reader can see: present and not expired (expired data reads as absent)."""
    return and_(_c.data.is_not(None), or_(_c.expires_at.is_(None), _c.expires_at > now))


_NOW = bindparam("p_now", type_=UTCDateTime())
_THIS_CONTACT = and_(
    owned_by(_contacts, bindparam("p_org")), _c.identifier == bindparam("p_identifier")
)
_LIVE = _live(_NOW)

_GET = select(_c.data, _c.revision, _c.expires_at).where(_THIS_CONTACT, _LIVE)

_DELETE = (
    update(_contacts)
    .where(_THIS_CONTACT, _LIVE)
    .values(data=None, expires_at=None, updated_at=_NOW)
    .returning(_c.revision)
)

# expectedRevision > 0: only an existing, readable record at exactly that revision is replaced.
_REPLACE_EXPECTED = (
    update(_contacts)
    .where(_THIS_CONTACT, _c.revision == bindparam("p_expected"), _LIVE)
    .values(
        data=bindparam("p_data"),
        revision=_c.revision + 1,
        expires_at=bindparam("p_expires_at", type_=UTCDateTime()),
        updated_at=_NOW,
    )
    .returning(_c.revision)
)


def _build_upserts(insert_for: Any) -> tuple[Any, Any]:
    insert = insert_for(_contacts).values(
        organization_id=bindparam("p_org"),
        identifier=bindparam("p_identifier"),
        data=bindparam("p_data"),
        revision=1,
        expires_at=bindparam("p_expires_at", type_=UTCDateTime()),
        created_at=_NOW,
        updated_at=_NOW,
    )
    conflict: dict[str, Any] = {
        "index_elements": [_c.organization_id, _c.identifier],
        "set_": {
            "data": insert.excluded.data,
            "revision": _c.revision + 1,
            "expires_at": insert.excluded.expires_at,
            "updated_at": insert.excluded.updated_at,
        },
    }
    return (
        insert.on_conflict_do_update(**conflict).returning(_c.revision),
        insert.on_conflict_do_update(**conflict, where=~_LIVE).returning(_c.revision),
    )


#: Per dialect: (the PUT upsert, the same only when nothing is readable: expectedRevision 0).
#: Built once at import like the other statements here: constants, not a cache that fills as
#: requests arrive, so nothing outside the app's ``Runtime`` holds state between requests.
_UPSERTS: dict[str, tuple[Any, Any]] = {
    "postgresql": _build_upserts(postgresql.insert),
    "sqlite": _build_upserts(sqlite.insert),
}


#: Where the PUT, GET and DELETE statements run: the request's session (on its driver
#: connection), or a transaction of their own (``router``, when authentication opened no session).
#: Either way a statement is one driver call (``callplane.kit.driver``): through the session layer a
#: PUT cost more in greenlet switches, execution contexts and result objects than its upsert.
Db = AsyncSession | DriverConnection


def _statement(dialect: Dialect, key: str) -> Any:
    return {
        "get": lambda: _GET,
        "delete": lambda: _DELETE,
        "replace_expected": lambda: _REPLACE_EXPECTED,
        "upsert": lambda: _UPSERTS[dialect.name][0],
        "upsert_absent": lambda: _UPSERTS[dialect.name][1],
    }[key]


def _compiled(dialect: Dialect, key: str) -> Prepared:
    return fixed_statement(f"contacts.{key}", dialect, _statement(dialect, key))


async def _fetchone(db: Db, key: str, params: dict[str, Any]) -> dict[str, Any] | None:
    driver = db if isinstance(db, DriverConnection) else await driver_connection(db)
    return await driver.fetchone(_compiled(driver.dialect, key), params)


def remaining_ttl(expires_at: datetime | None, now: datetime) -> int | None:
    """Whole seconds left, rounded up: a PUT with ttlSeconds 60 answers 60, and data that is
    still readable never shows 0."""
    if expires_at is None:
        return None
    left = expires_at - now
    return left.days * 86_400 + left.seconds + (1 if left.microseconds else 0)


async def put_contact_data(
    db: Db,
    organization_id: int,
    identifier: str,
    write: ContactWrite,
    *,
    now: datetime | None = None,
) -> StoredData:
    """Replace the data of ``identifier`` (creating the contact), one atomic statement."""
    now = now or utcnow()
    expires_at = None
    if write.ttl_seconds is not None:
        expires_at = now + timedelta(seconds=write.ttl_seconds)
    params = {
        "p_org": organization_id,
        "p_identifier": identifier,
        "p_data": write.data_json,
        "p_expires_at": expires_at,
        "p_now": now,
    }
    expected = write.expected_revision
    if expected is None:
        key = "upsert"
    elif expected == 0:
        key = "upsert_absent"
    else:
        key = "replace_expected"
        params["p_expected"] = expected
    row = await _fetchone(db, key, params)
    if row is None:
        raise Conflict("expectedRevision does not match the stored revision")
    return StoredData(identifier, write.data_json, row["revision"], expires_at)


async def get_contact_data(
    db: Db, organization_id: int, identifier: str, *, now: datetime | None = None
) -> StoredData:
    params = {"p_org": organization_id, "p_identifier": identifier, "p_now": now or utcnow()}
    row = await _fetchone(db, "get", params)
    if row is None:
        raise NotFound("Contact data not found")
    return StoredData(identifier, row["data"], row["revision"], row["expires_at"])


async def delete_contact_data(
    db: Db, organization_id: int, identifier: str, *, now: datetime | None = None
) -> None:
    """Clear the data; the contact row and its revision counter remain
    (docs/api-contract.md#contact-data)."""
    params = {"p_org": organization_id, "p_identifier": identifier, "p_now": now or utcnow()}
    if await _fetchone(db, "delete", params) is None:
        raise NotFound("Contact data not found")


async def list_contacts(
    session: AsyncSession,
    organization_id: int,
    page: int,
    page_size: int,
    *,
    now: datetime | None = None,
) -> tuple[Sequence[Row[Any]], int]:
    """Contacts with readable data, oldest first; deleted or expired data is not listed."""
    now = now or utcnow()
    query = select_owned(
        _contacts,
        organization_id,
        _c.identifier,
        _c.revision,
        _c.expires_at,
        _c.created_at,
        _c.updated_at,
    ).where(_live(now))
    total = await count(session, query)
    start = offset(page, page_size)
    if start >= total:
        return [], total
    rows = await session.execute(
        query.order_by(_c.created_at, _c.identifier).limit(page_size).offset(start)
    )
    return rows.all(), total


async def purge_expired(session: AsyncSession, *, now: datetime, batch_size: int) -> int:
    """Clear up to ``batch_size`` expired records; returns how many.

    Idempotent and safe to run from several processes at once: the statement only touches rows
    still expired when it runs, and on PostgreSQL the batch is chosen with ``FOR UPDATE SKIP
    LOCKED``, so two purgers (or a purger and a PUT) never wait on each other's rows.
    """
    expired = (
        select(_c.organization_id, _c.identifier)
        .where(_c.expires_at <= now)
        .limit(batch_size)
        .with_for_update(skip_locked=True)
    )
    purge = (
        update(_contacts)
        .where(tuple_(_c.organization_id, _c.identifier).in_(expired), _c.expires_at <= now)
        .values(data=None, expires_at=None)
    )
    reason = "expired data is cleared for every organization; the rows are chosen by expiry only"
    result = await session.execute(across_organizations(purge, reason))
    return int(result.rowcount)  # type: ignore[attr-defined]
