"""Agent tests, and the background runs that prove a commit with them (docs/agent-tests.md).

A test is a named case of one agent. A run (of tests, or a replay of real calls) snapshots what
it needs when it is asked for (the tests' specs, the calls' caller lines), so deleting a test
or a call while a run uses it changes nothing about the run. Workers claim runs in ``running``
under a lease, as recording legs are claimed: a worker that dies leaves the run to the next.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKeyConstraint, Index, String, text
from sqlalchemy.orm import Mapped, mapped_column

from callplane.models.base import Base, utcnow

_QUEUED = "status = 'running'"


class AgentTest(Base):
    __tablename__ = "agent_tests"
    __table_args__ = (
        ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        ForeignKeyConstraint(["organization_id"], ["organizations.id"], ondelete="CASCADE"),
        Index(
            "ix_agent_tests_organization_id_agent_id_name",
            "organization_id",
            "agent_id",
            "name",
            unique=True,
        ),
    )

    organization_id: Mapped[int] = mapped_column(primary_key=True)
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    agent_id: Mapped[int]
    name: Mapped[str] = mapped_column(String(100))
    #: Everything of the test but its name, as validated (``agent_tests.spec``).
    spec: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class AgentRun(Base):
    """A test run (``kind`` tests) or a replay (``kind`` replay) of one agent at one commit."""

    __tablename__ = "agent_runs"
    __table_args__ = (
        ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        ForeignKeyConstraint(["organization_id"], ["organizations.id"], ondelete="CASCADE"),
        Index(
            "ix_agent_runs_organization_id_agent_id_kind_created_at",
            "organization_id",
            "agent_id",
            "kind",
            "created_at",
        ),
        # The merge gate's question: the runs of one commit.
        Index(
            "ix_agent_runs_organization_id_agent_id_commit_id",
            "organization_id",
            "agent_id",
            "commit_id",
        ),
        # The workers' queue spans organizations, so it is not led by organization_id; only
        # runs still running are in it.
        Index(
            "ix_agent_runs_work_queue",
            "lease_expires_at",
            sqlite_where=text(_QUEUED),
            postgresql_where=text(_QUEUED),
        ),
        CheckConstraint("kind IN ('tests', 'replay')", name="kind"),
        CheckConstraint("mode IN ('text', 'audio')", name="mode"),
        CheckConstraint(
            "status IN ('running', 'passed', 'failed', 'error', 'done')", name="status"
        ),
    )

    organization_id: Mapped[int] = mapped_column(primary_key=True)
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    agent_id: Mapped[int]
    kind: Mapped[str] = mapped_column(String(16))
    ref: Mapped[str] = mapped_column(String(64))
    commit_id: Mapped[uuid.UUID]
    mode: Mapped[str] = mapped_column(String(8), default="text")
    status: Mapped[str] = mapped_column(String(16), default="running")
    #: What the run works on, taken when it was asked for: ``{"tests": [{"name", ...spec}]}``
    #: or ``{"calls": [...]}``.
    work: Mapped[dict[str, Any]]
    results: Mapped[list[Any]] = mapped_column(default=list)
    #: Why a run is ``error`` (a judge's unreadable answer, the model unreachable).
    error: Mapped[str | None] = mapped_column(String(2000), default=None)
    lease_token: Mapped[uuid.UUID | None] = mapped_column(default=None)
    lease_expires_at: Mapped[datetime | None] = mapped_column(default=None)
    attempts: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(default=None)
