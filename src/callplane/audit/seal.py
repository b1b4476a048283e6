"""Sealing: numbering and hashing the events written since, in transactions of their own.

An organization's unsealed events are taken in ``id`` order, a batch at a time, under its
chain head's lock (``SELECT … FOR UPDATE`` on PostgreSQL; on SQLite the write transaction's
lock, taken at ``BEGIN IMMEDIATE``): each gets the head's next number and the hash over the one
before, and the head moves to the last, only if it still is where it was read (a conditional
``UPDATE``). Two sealers of one organization therefore take turns: the second reads, once the
first commits, the head it left and the events it did not seal. Sealing twice seals nothing the
second time. The chain's order is the order sealing found the events in, kept as ``seq``; on
PostgreSQL ``id`` is not the commit order, so an event committed after a higher id was sealed
is simply sealed in a later batch, with a later number (``verify`` follows ``seq``).

Events are sealed by the workers' AUDIT_SEAL task every ``INTERVAL_SECONDS``, by
``GET /audit_log`` before it reads, and by ``callplane audit verify`` before it checks. Until
then an event has no hash: one deleted before it is sealed leaves no trace (``docs/privacy.md``).
"""

from __future__ import annotations

from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.audit.chain import FIELDS, GENESIS, Event, chain_hash
from callplane.kit.db import Database, dialect_insert
from callplane.kit.tenancy import across_organizations, owned_by, select_owned, update_owned
from callplane.models.audit import AuditEvent, AuditHead

#: Events per sealing transaction.
BATCH = 500
#: How often a worker seals what was written since (the longest an event goes without a hash
#: while a worker runs).
INTERVAL_SECONDS = 1.0

_EVENTS = cast(sa.Table, AuditEvent.__table__)
_REASON = "sealing finds every organization with events written since the last seal"


class HeadMoved(RuntimeError):
    """The head moved under its own lock: nothing is written, the transaction is rolled back."""


async def unsealed_organizations(session: AsyncSession) -> list[int]:
    query = sa.select(AuditEvent.organization_id).where(AuditEvent.seq.is_(None)).distinct()
    found = await session.scalars(across_organizations(query, _REASON))
    return sorted(found)


async def has_unsealed(session: AsyncSession, organization_id: int) -> bool:
    query = select_owned(AuditEvent, organization_id, AuditEvent.id).where(AuditEvent.seq.is_(None))
    return await session.scalar(query.limit(1)) is not None


async def seal_batch(session: AsyncSession, organization_id: int, limit: int = BATCH) -> int:
    """Seal the organization's oldest unsealed events (at most ``limit``) in ``session``'s
    write transaction, which the caller commits; how many were sealed."""
    org = organization_id
    start = dialect_insert(session, AuditHead.__table__).values(
        organization_id=org, seq=0, hash=GENESIS
    )
    await session.execute(start.on_conflict_do_nothing(index_elements=["organization_id"]))
    # The lock comes first: what is read after it is what the previous sealer committed.
    head = (
        await session.execute(
            select_owned(AuditHead, org, AuditHead.seq, AuditHead.hash).with_for_update()
        )
    ).one()
    columns = [_EVENTS.c.id, *(_EVENTS.c[name] for name in FIELDS)]
    rows = (
        await session.execute(
            sa.select(*columns)
            .where(owned_by(_EVENTS, org), _EVENTS.c.seq.is_(None))
            .order_by(_EVENTS.c.id)
            .limit(limit)
        )
    ).all()
    if not rows:
        return 0
    seq, previous = int(head.seq), str(head.hash)
    sealed: list[dict[str, Any]] = []
    for row in rows:
        seq += 1
        previous = chain_hash(previous, Event(**{name: row._mapping[name] for name in FIELDS}), seq)
        sealed.append({"event_id": row.id, "new_seq": seq, "new_hash": previous})
    await _number(session, org, sealed)
    moved = await session.execute(
        update_owned(AuditHead, org)
        .where(AuditHead.seq == head.seq)
        .values(seq=seq, hash=previous)
        .execution_options(synchronize_session=False)
    )
    if getattr(moved, "rowcount", 1) != 1:
        raise HeadMoved(f"organization {org}: the audit chain's head moved while sealing")
    return len(sealed)


async def _number(session: AsyncSession, org: int, sealed: list[dict[str, Any]]) -> None:
    """Write the events' numbers and hashes: on PostgreSQL in one statement (``unnest`` of
    three arrays), elsewhere one row at a time."""
    if session.get_bind().dialect.name != "postgresql":
        await session.execute(
            sa.update(_EVENTS)
            .where(owned_by(_EVENTS, org), _EVENTS.c.id == sa.bindparam("event_id"))
            .values(seq=sa.bindparam("new_seq"), hash=sa.bindparam("new_hash")),
            sealed,
        )
        return
    arrays = [
        sa.bindparam(name, [row[name] for row in sealed], type_=ARRAY(type_))
        for name, type_ in (("event_id", sa.Integer()), ("new_seq", sa.Integer()))
    ]
    hashes = sa.bindparam("new_hash", [row["new_hash"] for row in sealed], type_=ARRAY(sa.Text()))
    values = (
        sa.func.unnest(*arrays, hashes)
        .table_valued("event_id", "new_seq", "new_hash")
        .render_derived(name="sealed")
    )
    await session.execute(
        sa.update(_EVENTS)
        .where(owned_by(_EVENTS, org), _EVENTS.c.id == values.c.event_id)
        .values(seq=values.c.new_seq, hash=values.c.new_hash)
    )


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
