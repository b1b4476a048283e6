"""Wire models of web calls and their tokens (docs/web-calls.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from urllib.parse import urlsplit
from uuid import UUID

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from callplane.kit.schemas import Attributes, SafeStr

#: An offer of a browser is a few kilobytes (``telephony.webrtc`` checks the same bound).
MAX_OFFER_CHARS = 32_768
#: A token lives at most this long (docs/web-calls.md): long enough to load a page and press a
#: button.
MAX_TOKEN_SECONDS = 300

BranchName = Annotated[SafeStr, StringConstraints(min_length=1, max_length=255)]
CommitId = Annotated[SafeStr, StringConstraints(min_length=1, max_length=64)]


def _origin(value: str) -> str:
    """A browser origin exactly as the browser sends it: scheme, host and port, no path."""
    parts = urlsplit(value)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or parts.username is not None
        or any(c.isspace() for c in value)
    ):
        raise ValueError("must be an origin such as https://www.example.com")
    return f"{parts.scheme}://{parts.netloc.lower()}"


Origin = Annotated[str, StringConstraints(max_length=2048), AfterValidator(_origin)]


class _AgentRef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent_id: UUID
    agent_branch_name: BranchName | None = None
    agent_commit_id: CommitId | None = None
    params: Attributes = {}

    @model_validator(mode="after")
    def _one_ref(self) -> _AgentRef:
        if self.agent_branch_name is not None and self.agent_commit_id is not None:
            raise ValueError("give agent_branch_name or agent_commit_id, not both")
        return self


class WebCallTokenCreate(_AgentRef):
    allowed_origin: Origin
    expires_in_seconds: int = Field(default=MAX_TOKEN_SECONDS, ge=1, le=MAX_TOKEN_SECONDS)


class WebCallTokenCreated(BaseModel):
    token: str
    expires_at: datetime


class WebCallCreate(BaseModel):
    """With an API key: ``agent_id`` is required. With a token: only ``sdp`` (the token names
    the agent, ref and params)."""

    model_config = ConfigDict(extra="forbid")

    agent_id: UUID | None = None
    agent_branch_name: BranchName | None = None
    agent_commit_id: CommitId | None = None
    params: Attributes | None = None
    sdp: Annotated[str, StringConstraints(min_length=1, max_length=MAX_OFFER_CHARS)]


class WebCallCreated(BaseModel):
    call_id: UUID
    sdp: str
