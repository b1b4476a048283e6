"""Web call tokens and the creation of a web call's row.

A token is ``cpw_`` + 32 random bytes (url-safe), shown once; only its SHA-256 digest is stored.
It is spent by the transaction that creates its call, with a conditional UPDATE (unused, not
expired): two requests racing with one token create one call.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.agents.refs import as_commit_id
from callplane.agents.service import resolve_for_call
from callplane.calls.answered import add_answered_call
from callplane.errors import InvalidInput, RateLimited, Unauthorized
from callplane.kit.tenancy import across_organizations, select_owned, update_owned
from callplane.models.base import utcnow
from callplane.models.calls import ACTIVE_STATUSES, Call
from callplane.models.web_calls import WebCallToken
from callplane.runtime import Runtime
from callplane.web_calls.schemas import WebCallTokenCreate

TOKEN_PREFIX = "cpw_"
#: How long a caller over its organization's limit of calls in progress is told to wait.
BUSY_RETRY_SECONDS = 5


def is_web_call_token(bearer: str) -> bool:
    return bearer.startswith(TOKEN_PREFIX)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


async def check_agent(
    session: AsyncSession,
    organization_id: int,
    agent_uuid: uuid.UUID,
    branch_name: str | None,
    commit_id: str | None,
) -> None:
    """The agent and ref a web call would run exist in the organization (422 naming the field,
    as ``POST /calls``); the commit itself is resolved when the call starts."""
    await resolve_for_call(
        session,
        organization_id,
        agent_uuid=agent_uuid,
        branch_name=branch_name,
        commit_id=commit_uuid(commit_id),
    )


def commit_uuid(commit_id: str | None) -> uuid.UUID | None:
    """A commit id as given in a body, read as the agents API reads refs (``as_commit_id``):
    not a commit id at all is the same 422 as an unknown one."""
    if commit_id is None:
        return None
    found = as_commit_id(commit_id)
    if found is None:
        raise InvalidInput("agent_commit_id: no such commit", loc=("body", "agent_commit_id"))
    return found


async def mint_token(
    session: AsyncSession, organization_id: int, body: WebCallTokenCreate
) -> tuple[str, datetime]:
    await check_agent(
        session, organization_id, body.agent_id, body.agent_branch_name, body.agent_commit_id
    )
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    now = utcnow()
    expires_at = now + timedelta(seconds=body.expires_in_seconds)
    session.add(
        WebCallToken(
            organization_id=organization_id,
            id=uuid.uuid4(),
            token_digest=_digest(token),
            agent_uuid=body.agent_id,
            agent_branch_name=body.agent_branch_name,
            agent_commit_id=body.agent_commit_id,
            params=body.params,
            allowed_origin=body.allowed_origin,
            expires_at=expires_at,
            created_at=now,
        )
    )
    await session.flush()
    return token, expires_at


async def usable_token(session: AsyncSession, token: str, origin: str | None) -> WebCallToken:
    """The token, if it may start a call from ``origin`` now; else 401 (one message for every
    reason: unknown, spent, expired or another origin, so nothing is learnt by probing)."""
    row = await session.scalar(
        across_organizations(
            select(WebCallToken).where(WebCallToken.token_digest == _digest(token)),
            "a web call token names its organization: the digest finds it",
        )
    )
    if (
        row is None
        or row.used_at is not None
        or row.expires_at <= utcnow()
        or origin is None
        or origin.lower() != row.allowed_origin
    ):
        raise Unauthorized("Invalid, expired or already used web call token")
    return row


async def origin_has_live_token(session: AsyncSession, origin: str) -> bool:
    """A CORS preflight carries no token: it is answered only for an origin that some live
    token names."""
    found = await session.scalar(
        across_organizations(
            select(WebCallToken.id)
            .where(
                WebCallToken.allowed_origin == origin.lower(),
                WebCallToken.expires_at > utcnow(),
                WebCallToken.used_at.is_(None),
            )
            .limit(1),
            "a preflight names an origin, not an organization",
        )
    )
    return found is not None


@dataclass(frozen=True)
class WebCallSpec:
    organization_id: int
    agent_uuid: uuid.UUID
    agent_branch_name: str | None
    agent_commit_id: str | None
    params: dict[str, Any] = field(default_factory=dict)
    #: The token being spent, if the call was started with one.
    token_id: uuid.UUID | None = None


def spec_of_token(row: WebCallToken) -> WebCallSpec:
    return WebCallSpec(
        organization_id=row.organization_id,
        agent_uuid=row.agent_uuid,
        agent_branch_name=row.agent_branch_name,
        agent_commit_id=row.agent_commit_id,
        params=dict(row.params or {}),
        token_id=row.id,
    )


async def open_web_call(
    session: AsyncSession, runtime: Runtime, spec: WebCallSpec, worker_id: str
) -> Call:
    """The call, created answered and held by ``worker_id``; the token spent in the same
    transaction."""
    org = spec.organization_id
    now = utcnow()
    if spec.token_id is not None:
        spent = await session.execute(
            update_owned(WebCallToken, org)
            .where(
                WebCallToken.id == spec.token_id,
                WebCallToken.used_at.is_(None),
                WebCallToken.expires_at > now,
            )
            .values(used_at=now)
        )
        if getattr(spent, "rowcount", 0) != 1:
            raise Unauthorized("Invalid, expired or already used web call token")
    active = await session.scalar(
        select_owned(Call, org, func.count()).where(Call.status.in_(ACTIVE_STATUSES))
    )
    if (active or 0) >= runtime.settings.max_concurrent_calls:
        raise RateLimited(BUSY_RETRY_SECONDS)
    # The head of the branch at this moment is the commit the call runs (docs/agents.md).
    agent = await resolve_for_call(
        session,
        org,
        agent_uuid=spec.agent_uuid,
        branch_name=spec.agent_branch_name,
        commit_id=commit_uuid(spec.agent_commit_id),
    )
    return await add_answered_call(
        session,
        runtime,
        organization_id=org,
        direction="web",
        worker_id=worker_id,
        agent=agent,
        params=spec.params,
    )
