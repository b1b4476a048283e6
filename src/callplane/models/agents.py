"""Agents and their versioned configuration (docs/agents.md).

An agent owns branches; a branch names its head commit; a commit is immutable (the whole config,
its parents, who made it and why). Moving a head is one conditional UPDATE on
``agent_branches.head`` (``agents.service``), so a commit never needs to be changed after insert.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, ForeignKeyConstraint, Index, String, Text, false
from sqlalchemy.orm import Mapped, mapped_column

from callplane.models.base import Base, utcnow


class Agent(Base):
    __tablename__ = "agents"
    __table_args__ = (
        Index("ix_agents_organization_id_uuid", "organization_id", "uuid", unique=True),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    organization_id: Mapped[int] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    uuid: Mapped[uuid.UUID] = mapped_column(default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(255))
    #: DELETE archives: past calls keep naming the agent, the API no longer shows it.
    archived: Mapped[bool] = mapped_column(default=False, server_default=false())
    #: Signs function-tool requests (Standard Webhooks ``whsec_``); rotated by the API.
    tools_secret: Mapped[str | None] = mapped_column(String(128), default=None)
    #: Merging a branch needs a passing run of every test on its head (docs/agent-tests.md).
    merge_requires_passing_tests: Mapped[bool] = mapped_column(
        default=False, server_default=false()
    )
    #: A traffic split over branches, ``[{"branch", "weight"}]``; None: calls run main.
    traffic: Mapped[list[Any] | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class AgentBranch(Base):
    __tablename__ = "agent_branches"
    __table_args__ = (
        Index(
            "ix_agent_branches_organization_id_agent_id_name",
            "organization_id",
            "agent_id",
            "name",
            unique=True,
        ),
    )

    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    agent_id: Mapped[int] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(63))
    #: The head commit's id. Not a foreign key: the head moves in the same statement that
    #: checks it, before or after the commit row is written in the same transaction.
    head: Mapped[uuid.UUID]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class AgentCommit(Base):
    __tablename__ = "agent_commits"
    __table_args__ = (
        ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        # History newest first, a page at a time, from the index alone.
        Index(
            "ix_agent_commits_organization_id_agent_id_created_at_id",
            "organization_id",
            "agent_id",
            "created_at",
            "id",
        ),
    )

    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    agent_id: Mapped[int]
    parents: Mapped[list[str]]
    branch: Mapped[str] = mapped_column(String(63))
    author: Mapped[str] = mapped_column(String(400))
    message: Mapped[str] = mapped_column(Text)
    config: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
