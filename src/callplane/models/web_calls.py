"""Web call tokens: what a website holds instead of an API key (docs/web-calls.md).

A token is minted with an API key (``POST /web_calls/tokens``) and names everything the call
will be: the agent, its ref, the params, and the one browser origin that may use it. Only its
SHA-256 digest is stored; it is spent by the ``POST /web_calls`` that uses it (``used_at``).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from callplane.models.base import Base, utcnow


class WebCallToken(Base):
    __tablename__ = "web_call_tokens"
    __table_args__ = (
        # A presented token is found by its digest, before its organization is known.
        Index("ix_web_call_tokens_token_digest", "token_digest", unique=True),
        # A CORS preflight carries no token: its origin must be one a live token names.
        Index("ix_web_call_tokens_allowed_origin_expires_at", "allowed_origin", "expires_at"),
    )

    organization_id: Mapped[int] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    token_digest: Mapped[bytes] = mapped_column(LargeBinary(32))
    agent_uuid: Mapped[uuid.UUID] = mapped_column()
    agent_branch_name: Mapped[str | None] = mapped_column(String(255), default=None)
    agent_commit_id: Mapped[str | None] = mapped_column(String(64), default=None)
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    allowed_origin: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime] = mapped_column()
    used_at: Mapped[datetime | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
