"""Reading external calls with their visible recording legs (SPEC GET /external_calls/{uuid})."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, bindparam, func, select
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.errors import NotFound
from callplane.kit.driver import Db, Prepared, driver_of, fixed_statement
from callplane.kit.pagination import count, offset
from callplane.kit.tenancy import owned_by, select_owned
from callplane.models.base import utcnow
from callplane.models.external_calls import ExternalCall, Recording

#: A leg's transcript and summary are shown once its processing is complete (SPEC rule 1).
PROCESSED_STATUS = "transcribed"


async def visible_legs(
    session: AsyncSession, organization_id: int, external_call_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, list[Recording]]:
    """Visible legs of several calls in one query, each call's list chronological.

    Chronological is started_at, then id; legs without a start time come last on both backends.
    """
    legs: dict[uuid.UUID, list[Recording]] = defaultdict(list)
    if not external_call_ids:
        return legs
    rows = await session.scalars(
        select_owned(Recording, organization_id)
        .where(
            Recording.external_call_id.in_(external_call_ids),
            Recording.deleted.is_(False),
            Recording.excluded.is_(False),
        )
        .order_by(Recording.started_at.is_(None), Recording.started_at, Recording.id)
    )
    for leg in rows:
        assert leg.external_call_id is not None
        legs[leg.external_call_id].append(leg)
    return legs


async def get_external_call(
    session: AsyncSession, organization_id: int, external_call_id: uuid.UUID
) -> tuple[ExternalCall, list[Recording]]:
    call = await session.get(ExternalCall, (organization_id, external_call_id))
    if call is None:
        raise NotFound("External call not found")
    legs = await visible_legs(session, organization_id, [call.id])
    return call, legs[call.id]


# The two reads of the API (one call, a page of calls) are the hot paths of this module: each is
# one statement compiled once per dialect and run on the driver connection of the request's
# transaction (callplane.kit.driver, the style of custom data's hot paths), and returns plain rows
# that the wire functions turn into JSON without building ORM objects. Writes and the worker
# stay on the ORM session: they run a few times per leg, not per read.

#: Columns of a call in a read; ``wire.call_json`` takes rows with these keys.
CALL_COLUMNS = (
    "id",
    "external_call_id",
    "title",
    "direction",
    "from_number",
    "to_number",
    "duration_seconds",
    "started_at",
    "status",
    "source_id",
    "source_name",
    "source_provider",
    "created_at",
    "updated_at",
)
#: Columns of a leg on the wire; ``wire.leg_json`` takes rows with these keys.
LEG_FIELDS = (
    "id",
    "file_name",
    "status",
    "started_at",
    "transcript",
    "summary",
    "created_at",
    "updated_at",
    "error",
)
#: Columns of a visible leg in a read: the wire's and what signing its URL needs
#: (``recordings.service.sign_rows``); in the joined row they are prefixed ``leg_``.
_LEG_COLUMNS = (
    *LEG_FIELDS,
    "organization_id",
    "storage_key",
    "content_type",
    "awaiting_redaction",
)
_LEG_PREFIX = "leg_"
_LEG_LABELS = tuple((_LEG_PREFIX + name, name) for name in _LEG_COLUMNS)


def _prepared(name: str, dialect: Dialect, build: Any) -> Prepared:
    # The rows go out only as JSON (``wire.call_json``): ids and timestamps are read as text.
    return fixed_statement(f"external_calls.{name}", dialect, build, wire=True)


def _with_legs(calls: Any) -> Any:
    """SELECT the call columns of ``calls`` (the table or a subquery of it) and its visible legs,
    one row per leg (one row with null leg columns for a call without any), legs chronological:
    started_at, then id, legs without a start time last on both backends."""
    leg = Recording.__table__
    return (
        select(
            *(calls.c[name] for name in CALL_COLUMNS),
            *(leg.c[name].label(_LEG_PREFIX + name) for name in _LEG_COLUMNS),
        )
        .select_from(
            calls.outerjoin(
                leg,
                and_(
                    # Anchored on the parameter itself, not on ``calls``: a subquery's
                    # organization is not visible to the tenancy check (tests/tenancy_check.py).
                    owned_by(leg, bindparam("org")),
                    leg.c.external_call_id == calls.c.id,
                    leg.c.deleted.is_(False),
                    leg.c.excluded.is_(False),
                ),
            )
        )
        .order_by(leg.c.started_at.is_(None), leg.c.started_at, leg.c.id)
    )


def _build_get() -> Any:
    call = ExternalCall.__table__
    return _with_legs(call).where(owned_by(call, bindparam("org")), call.c.id == bindparam("id"))


def _page(call: Any) -> Any:
    return (
        select(call)
        .where(owned_by(call, bindparam("org")))
        .order_by(call.c.created_at.desc(), call.c.id.desc())
        .limit(bindparam("limit"))
        .offset(bindparam("offset"))
    )


def _build_page() -> Any:
    call = ExternalCall.__table__
    return _page(call).with_only_columns(*(call.c[name] for name in CALL_COLUMNS))


def _build_page_legs() -> Any:
    """The visible legs of the same page (the page selected again inside: one statement, no
    list of ids to bind), by call, each call's legs chronological."""
    call = ExternalCall.__table__
    leg = Recording.__table__
    page = _page(call).with_only_columns(call.c.id).subquery("page")
    return (
        select(leg.c.external_call_id, *(leg.c[name] for name in _LEG_COLUMNS))
        .select_from(leg.join(page, leg.c.external_call_id == page.c.id))
        .where(
            owned_by(leg, bindparam("org")),
            leg.c.deleted.is_(False),
            leg.c.excluded.is_(False),
        )
        .order_by(leg.c.external_call_id, leg.c.started_at.is_(None), leg.c.started_at, leg.c.id)
    )


def _build_count() -> Any:
    call = ExternalCall.__table__
    return select(func.count()).select_from(call).where(owned_by(call, bindparam("org")))


def _group(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Joined rows (ordered by call) as calls, each with its legs."""
    out: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    current: Any = None
    for row in rows:
        if current is None or row["id"] != current[0]["id"]:
            current = ({name: row[name] for name in CALL_COLUMNS}, [])
            out.append(current)
        if row["leg_id"] is not None:
            current[1].append({name: row[label] for label, name in _LEG_LABELS})
    return out


async def read_external_call(
    db: Db, organization_id: int, external_call_id: uuid.UUID
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One call and its visible legs, as rows (ids and timestamps as their JSON text), in one
    statement."""
    driver = await driver_of(db)
    prepared = _prepared("get", driver.dialect, _build_get)
    rows = await driver.fetchall(prepared, {"org": organization_id, "id": external_call_id})
    if not rows:
        raise NotFound("External call not found")
    return _group(rows)[0]


async def read_external_calls(
    db: Db, organization_id: int, page: int, page_size: int
) -> tuple[list[tuple[dict[str, Any], list[dict[str, Any]]]], int]:
    """A page of calls, newest first (created_at, then id), each with its visible legs, as rows
    (ids and timestamps as their JSON text), and the organization's number of calls: three
    statements (the page and its legs apart, so a call's columns are converted once, not once
    per leg)."""
    driver = await driver_of(db)
    dialect = driver.dialect
    values = {"org": organization_id, "limit": page_size, "offset": offset(page, page_size)}
    total = await driver.scalar(_prepared("count", dialect, _build_count), values)
    calls = await driver.fetchall(_prepared("page", dialect, _build_page), values)
    if not calls:
        return [], int(total)
    legs: dict[Any, list[dict[str, Any]]] = {call["id"]: [] for call in calls}
    for leg in await driver.fetchall(_prepared("page legs", dialect, _build_page_legs), values):
        legs[leg.pop("external_call_id")].append(leg)
    return [(call, legs[call["id"]]) for call in calls], int(total)


async def list_external_calls(
    session: AsyncSession, organization_id: int, page: int, page_size: int
) -> tuple[Sequence[ExternalCall], int, dict[uuid.UUID, list[Recording]]]:
    """A page of calls, newest first (created_at, then id), and the legs of all of them."""
    query = select_owned(ExternalCall, organization_id)
    total = await count(session, query)
    calls = (
        await session.scalars(
            query.order_by(ExternalCall.created_at.desc(), ExternalCall.id.desc())
            .limit(page_size)
            .offset(offset(page, page_size))
        )
    ).all()
    legs = await visible_legs(session, organization_id, [c.id for c in calls])
    return calls, total, legs


async def create_external_call(
    session: AsyncSession, organization_id: int, fields: dict[str, Any]
) -> ExternalCall:
    """A new session with no legs: ``processing`` until legs arrive and are transcribed."""
    source = fields.pop("source", None) or {}
    call = ExternalCall(organization_id=organization_id, status="processing", **fields)
    if source:
        call.source_id = source.get("id") or uuid.uuid4()
        call.source_name = source.get("name")
        call.source_provider = source.get("provider")
    session.add(call)
    await session.flush()
    return call


async def lock_external_call(
    session: AsyncSession, organization_id: int, external_call_id: uuid.UUID
) -> ExternalCall:
    """The call, its row locked for the rest of the transaction (PostgreSQL; SQLite's writers
    are serialized anyway): every change of a leg and the recomputation of the call's status
    happen under it, so two legs finishing at once cannot both miss each other."""
    call: ExternalCall | None = await session.scalar(
        select(ExternalCall)
        .where(
            ExternalCall.organization_id == organization_id,
            ExternalCall.id == external_call_id,
        )
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if call is None:
        raise NotFound("External call not found")
    return call


async def add_leg(session: AsyncSession, call: ExternalCall, leg: Recording) -> Recording:
    """Attach a stored upload as a new ``pending`` leg; the call is processing again."""
    session.add(leg)
    await session.flush()
    await refresh_call(session, call)
    return leg


def derived_status(legs: Sequence[Recording], current: str) -> str:
    """docs/api-contract.md#external-calls: ``error`` if any visible leg failed, ``transcribed``
    once every visible leg is; otherwise ``processing``. A call without legs keeps its status."""
    if not legs:
        return current
    statuses = {leg.status for leg in legs}
    if "error" in statuses:
        return "error"
    if statuses == {PROCESSED_STATUS}:
        return PROCESSED_STATUS
    return "processing"


async def refresh_call(session: AsyncSession, call: ExternalCall) -> None:
    """Recompute the call's status and duration from its visible legs (call row locked).

    ``duration_seconds`` is the sum of the legs' decoded lengths, rounded; while no leg has a
    known length (legs imported without one), an imported duration is kept.
    """
    legs = (await visible_legs(session, call.organization_id, [call.id]))[call.id]
    call.status = derived_status(legs, call.status)
    lengths = [leg.duration_seconds for leg in legs if leg.duration_seconds is not None]
    if lengths:
        call.duration_seconds = round(sum(lengths))
    call.updated_at = utcnow()
    await session.flush()
