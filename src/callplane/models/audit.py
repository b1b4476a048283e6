"""The audit log: one hash chain of events per organization (``callplane.audit``).

An event is first a pending row (``AuditPending``), inserted in the transaction of the change it
records: one row in a table with no index but its key, so recording costs a write little.
Sealing (``audit.seal``), in short transactions of its own just after, moves an organization's
pending events into the chain (``AuditEvent``): numbered 1, 2, 3… with no gap, in pending ``id``
order, each hashed over the one before, so a changed, removed or inserted event shows when the
chain is recomputed. The chain's head (its last number and hash) is a row of its own that only
sealing reads and writes, under its row lock (PostgreSQL) or the write lock (SQLite): sealers
queue rather than fork the chain, writers never wait on it, and an event removed from the end
is still found.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, literal_column, text
from sqlalchemy.orm import Mapped, mapped_column

from callplane.models.base import Base


class _EventFields:
    """What an event says, pending or sealed (``audit.chain.FIELDS``, the hash's body), but
    its organization (declared by each table)."""

    at: Mapped[datetime]
    actor: Mapped[str] = mapped_column(String(300))
    action: Mapped[str] = mapped_column(String(100))
    resource_type: Mapped[str] = mapped_column(String(50))
    resource_id: Mapped[str | None] = mapped_column(String(300))
    ip: Mapped[str | None] = mapped_column(String(64))
    request_id: Mapped[str | None] = mapped_column(String(64))


#: Events per run of the resource filter's index (migration 0030): sealing writes into the
#: leaves of the newest run only, and the filter reads one index range per run.
RESOURCE_RUN_EVENTS = 16384
#: An event's run, as the index stores it (a query must name the same expression to use it).
resource_run = literal_column(f"(audit_events.seq / {RESOURCE_RUN_EVENTS})", Integer())
RESOURCE_INDEX = "ix_audit_events_organization_id_run_resource_id_seq"


class AuditEvent(_EventFields, Base):
    """A sealed event, keyed by its number in its organization's chain: sealing writes each
    event once into the table and every index, so there is no index it does not need (on SQLite
    the rows are stored in the key's order, WITHOUT ROWID), and none it writes at random: the
    resource filter's is kept by run of ``RESOURCE_RUN_EVENTS`` numbers, then resource. No
    foreign key: sealing holds the organization's head, which has one, while it writes; a
    trigger on ``organizations`` (migration 0029) removes an organization's events with it."""

    __tablename__ = "audit_events"
    __table_args__ = (
        Index("ix_audit_events_organization_id_at", "organization_id", "at"),
        Index("ix_audit_events_organization_id_actor_seq", "organization_id", "actor", "seq"),
        Index("ix_audit_events_organization_id_action_seq", "organization_id", "action", "seq"),
        Index(
            RESOURCE_INDEX,
            "organization_id",
            text(f"(seq / {RESOURCE_RUN_EVENTS})"),
            "resource_id",
            "seq",
        ),
        {"sqlite_with_rowid": False},
    )

    organization_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    #: The event's number in its organization's chain.
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    hash: Mapped[str] = mapped_column(String(64))


class AuditPending(_EventFields, Base):
    """An event written and not yet sealed. Its ``id`` is the order sealing takes events in (on
    PostgreSQL not the order they commit in: an event committed late is sealed in a later batch).
    No index but the key: the table holds what was written in the last second or so, and every
    index would be one more page written by each change. No foreign key either: the
    organization is the authenticated request's own, and on PostgreSQL the check would lock its
    row in every audited write (sealing drops events of an organization gone since)."""

    __tablename__ = "audit_pending"

    id: Mapped[int] = mapped_column(primary_key=True)
    organization_id: Mapped[int] = mapped_column(Integer)


class AuditHead(Base):
    __tablename__ = "audit_heads"

    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer)
    hash: Mapped[str] = mapped_column(String(64))
