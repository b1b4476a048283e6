"""Sealing: moving the events written since into the chain, in transactions of their own.

An organization's pending events are taken in ``id`` order, a batch at a time, under its chain
head's lock (``SELECT … FOR UPDATE`` on PostgreSQL; on SQLite the write transaction's lock, taken
at ``BEGIN IMMEDIATE``): each gets the head's next number and the hash over the one before, is
inserted into ``audit_events`` and deleted from ``audit_pending``, and the head moves to the last,
only if it still is where it was read (a conditional ``UPDATE``). Two sealers of one organization
therefore take turns: the second reads, once the first commits, the head it left and the events
it did not seal. Sealing twice seals nothing the second time. The chain's order is the order
sealing found the events in, kept as ``seq``; on PostgreSQL ``id`` is not the commit order, so
an event committed after a higher id was sealed is simply sealed in a later batch, with a later
number (``verify`` follows ``seq``).

Events are sealed by the workers' AUDIT_SEAL task every ``INTERVAL_SECONDS``, by
``GET /audit_log`` before it reads, and by ``callplane audit verify`` before it checks. Until
then an event has no hash: one deleted before it is sealed leaves no trace (``docs/privacy.md``).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.audit.chain import FIELDS, GENESIS, hash_of, utc_text
from callplane.kit.db import Database
from callplane.kit.driver import Db, driver_of, fixed_statement
from callplane.kit.tenancy import across_organizations, owned_by, select_owned
from callplane.models.audit import AuditEvent, AuditHead, AuditPending
from callplane.models.orgs import Organization

#: Events per sealing transaction.
BATCH = 500
#: How often a worker seals what was written since (the longest an event goes without a hash
#: while a worker runs).
INTERVAL_SECONDS = 1.0

_EVENTS = cast(sa.Table, AuditEvent.__table__)
_PENDING = cast(sa.Table, AuditPending.__table__)
_HEADS = cast(sa.Table, AuditHead.__table__)
_ORGANIZATIONS = cast(sa.Table, Organization.__table__)
_org: sa.BindParameter[int] = sa.bindparam("organization_id")
_REASON = "sealing finds every organization with events written since the last seal"


class HeadMoved(RuntimeError):
    """The head moved under its own lock: nothing is written, the transaction is rolled back."""


async def unsealed_organizations(session: AsyncSession) -> list[int]:
    query = sa.select(AuditPending.organization_id).distinct()
    found = await session.scalars(across_organizations(query, _REASON))
    return sorted(found)


async def has_unsealed(session: AsyncSession, organization_id: int) -> bool:
    query = select_owned(AuditPending, organization_id, AuditPending.id)
    return await session.scalar(query.limit(1)) is not None


# Sealing runs on the driver connection (``kit.driver``): a batch is a few hundred rows, and
# through the session each row's parameters would cost more than the database's work on it.


def _start_for(dialect: Dialect) -> Callable[[], sa.ClauseElement]:
    """The organization's head at the start of its chain, unless it has one, or the
    organization no longer exists."""
    insert = postgresql.insert if dialect.name == "postgresql" else sqlite.insert

    def build() -> sa.ClauseElement:
        exists = sa.select(_ORGANIZATIONS.c.id).where(_ORGANIZATIONS.c.id == _org).exists()
        genesis = sa.select(_org, sa.literal(0), sa.literal(GENESIS)).where(exists)
        return (
            insert(_HEADS)
            .from_select(["organization_id", "seq", "hash"], genesis)
            .on_conflict_do_nothing(index_elements=["organization_id"])
        )

    return build


def _drop_pending() -> sa.ClauseElement:
    return sa.delete(_PENDING).where(owned_by(_PENDING, _org))


def _lock_head() -> sa.ClauseElement:
    return sa.select(_HEADS.c.seq, _HEADS.c.hash).where(owned_by(_HEADS, _org)).with_for_update()


def _take() -> sa.ClauseElement:
    """The batch's pending events, removed and returned (in no particular order)."""
    oldest = (
        sa.select(_PENDING.c.id)
        .where(owned_by(_PENDING, _org))
        .order_by(_PENDING.c.id)
        .limit(sa.bindparam("batch", type_=sa.Integer()))
    )
    return (
        sa.delete(_PENDING)
        .where(owned_by(_PENDING, _org), _PENDING.c.id.in_(oldest))
        .returning(_PENDING.c.id, *(_PENDING.c[name] for name in FIELDS))
    )


_SEALED = (*FIELDS, "seq", "hash")
_AT = FIELDS.index("at")


def _record_sealed() -> sa.ClauseElement:
    """SQLite: run once per event (``executemany``: one driver call). A plain ``VALUES``, not
    ``INSERT … SELECT ?…``: SQLite runs the select as a subprogram per row, which cost sealing
    about half its time. Its parameters come in the order the statement names them
    (``_in_order``)."""
    return (
        sa.insert(_EVENTS)
        .inline()
        .values({name: sa.bindparam(name, type_=_EVENTS.c[name].type) for name in _SEALED})
    )


@functools.cache
def _in_order(names: tuple[str, ...]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """What takes a row in ``_SEALED`` order to the parameter order ``names``."""
    return operator.itemgetter(*(_SEALED.index(name) for name in names))


def _record_sealed_arrays() -> sa.ClauseElement:
    """PostgreSQL: the batch as one statement, each column's values an array (``unnest``):
    run once per event, the statement would cost the server a bind and an execution each."""
    arrays = [
        sa.bindparam(f"every_{name}", type_=postgresql.ARRAY(_EVENTS.c[name].type))
        for name in _SEALED
    ]
    rows = sa.func.unnest(*arrays).table_valued(*_SEALED).render_derived()
    batch = sa.select(*rows.c).where(owned_by(rows, _org))  # the batch is of one organization
    return sa.insert(_EVENTS).inline().from_select(_SEALED, batch)


def _advance() -> sa.ClauseElement:
    return (
        sa.update(_HEADS)
        .where(owned_by(_HEADS, _org), _HEADS.c.seq == sa.bindparam("was"))
        .values(seq=sa.bindparam("seq"), hash=sa.bindparam("hash"))
        .returning(_HEADS.c.seq)
    )


async def seal_batch(db: Db, organization_id: int, limit: int = BATCH) -> int:
    """Seal the organization's oldest pending events (at most ``limit``) in ``db``'s write
    transaction, which the caller commits; how many were sealed."""
    driver = await driver_of(db)
    dialect = driver.dialect
    org = {"organization_id": organization_id}
    await driver.scalar(fixed_statement("audit.start", dialect, _start_for(dialect)), org)
    # The lock comes first: what is read after it is what the previous sealer committed.
    head = await driver.fetchone(fixed_statement("audit.lock_head", dialect, _lock_head), org)
    if head is None:
        # The organization is gone (its head went with it): its pending events have no chain
        # to join, and ``audit_pending`` has no foreign key to have removed them.
        await driver.scalar(fixed_statement("audit.drop_pending", dialect, _drop_pending), org)
        return 0
    taken = await driver.fetchall_raw(
        fixed_statement("audit.take", dialect, _take), {**org, "batch": limit}
    )
    if not taken:
        return 0
    # Rows as the driver reads them (id, then FIELDS), handed back to it as they are: through
    # the column types' conversions a batch costs several times the hashing.
    taken.sort(key=lambda row: row[0])
    seq, previous = int(head["seq"]), str(head["hash"])
    sealed = []
    for row in taken:
        values = list(row[1:])
        at = values[_AT]
        values[_AT] = utc_text(at)
        seq += 1
        previous = hash_of(previous, seq, values)
        values[_AT] = at
        values += (seq, previous)
        sealed.append(values)
    if dialect.name == "postgresql":
        columns: dict[str, Any] = {
            f"every_{name}": [values[index] for values in sealed]
            for index, name in enumerate(_SEALED)
        }
        columns["organization_id"] = organization_id
        record = fixed_statement("audit.record_sealed_arrays", dialect, _record_sealed_arrays)
        await driver.scalar(record, columns)
    else:
        record = fixed_statement("audit.record_sealed", dialect, _record_sealed)
        reorder = _in_order(tuple(name for name, _ in record.params))
        await driver.executemany_raw(record, [reorder(values) for values in sealed])
    moved = await driver.scalar(
        fixed_statement("audit.advance", dialect, _advance),
        {**org, "was": head["seq"], "seq": seq, "hash": previous},
    )
    if moved is None:
        raise HeadMoved(
            f"organization {organization_id}: the audit chain's head moved while sealing"
        )
    return len(taken)


async def seal(db: Database, organization_id: int | None = None) -> int:
    """Seal everything written so far (one organization's, or every one's), a batch per
    transaction; how many events were sealed."""
    if organization_id is None:
        async with db.session(write=False) as session:
            organizations = await unsealed_organizations(session)
    else:
        organizations = [organization_id]
    total = 0
    for org in organizations:
        while True:
            async with db.session(write=True) as session:
                count = await seal_batch(session, org)
                await session.commit()
            total += count
            if count < BATCH:
                break
    return total
