"""Recomputing the audit log's hash chains (``callplane audit verify``).

What was written since the last seal is sealed first, in the same transaction (``seal_all``),
so every event the check reads has its number and hash. Each organization's events are read in
``seq`` order, a page at a time, and each hash is
recomputed from the one before: the first event whose number skips (one was deleted), or whose
hash does not match (it, or one before it, was changed), is named. The chain's head must end
where the events do, so an event deleted from the end is found too.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.audit.chain import GENESIS, Event, chain_hash
from callplane.audit.seal import BATCH, seal_batch, unsealed_organizations
from callplane.kit.tenancy import across_organizations, select_owned
from callplane.models.audit import AuditEvent, AuditHead

_PAGE = 1000


@dataclass(frozen=True)
class Break:
    organization_id: int
    seq: int
    reason: str

    def describe(self) -> str:
        return f"organization {self.organization_id}: event {self.seq} {self.reason}"


@dataclass(frozen=True)
class Verified:
    organizations: int
    events: int
    first_break: Break | None


async def _verify_organization(session: AsyncSession, head: AuditHead) -> tuple[int, Break | None]:
    org = head.organization_id
    previous, expected, checked = GENESIS, 1, 0
    while True:
        rows = (
            await session.scalars(
                select_owned(AuditEvent, org)
                .where(AuditEvent.seq >= expected)
                .order_by(AuditEvent.seq)
                .limit(_PAGE)
            )
        ).all()
        for row in rows:
            if row.seq != expected:
                return checked, Break(org, expected, f"is missing (the next one is {row.seq})")
            event = Event(
                organization_id=org,
                at=row.at,
                actor=row.actor,
                action=row.action,
                resource_type=row.resource_type,
                resource_id=row.resource_id,
                ip=row.ip,
                request_id=row.request_id,
            )
            if chain_hash(previous, event, row.seq) != row.hash:
                return checked, Break(org, row.seq, "does not fit: its hash does not match")
            previous, expected, checked = row.hash, expected + 1, checked + 1
        if len(rows) < _PAGE:
            break
    if head.seq != expected - 1 or head.hash != previous:
        return checked, Break(org, expected, f"is missing (the chain ends at {head.seq})")
    return checked, None


async def seal_all(session: AsyncSession, organization_id: int | None = None) -> int:
    """Seal every pending event (of one organization, or of all) in ``session``'s write
    transaction; how many."""
    organizations = (
        [organization_id] if organization_id is not None else await unsealed_organizations(session)
    )
    total = 0
    for org in organizations:
        while (count := await seal_batch(session, org)) == BATCH:
            total += count
        total += count
    return total


async def verify(session: AsyncSession, organization_id: int | None = None) -> Verified:
    heads_query = sa.select(AuditHead).order_by(AuditHead.organization_id)
    if organization_id is not None:
        heads_query = select_owned(AuditHead, organization_id)
    else:
        heads_query = across_organizations(
            heads_query, "the operator checks every organization's chain"
        )
    heads = (await session.scalars(heads_query)).all()
    total = 0
    for head in heads:
        checked, broken = await _verify_organization(session, head)
        total += checked
        if broken is not None:
            return Verified(len(heads), total, broken)
    return Verified(len(heads), total, None)
