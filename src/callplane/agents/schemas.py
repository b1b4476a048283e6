"""Wire models of docs/agents.md: request bodies and the Agent, Branch and Commit resources.

Config values are free JSON here and validated by ``agents.config`` (which names JSON paths).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from callplane.kit.schemas import SafeStr

Message = Annotated[SafeStr, StringConstraints(max_length=2_000)]
Ref = Annotated[SafeStr, StringConstraints(min_length=1, max_length=64)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AgentCreate(_Body):
    name: Annotated[SafeStr, StringConstraints(min_length=1, max_length=255)]
    config: dict[str, Any] = {}
    message: Message = "Initial configuration"


class AgentUpdate(_Body):
    name: Annotated[SafeStr, StringConstraints(min_length=1, max_length=255)] | None = None
    merge_requires_passing_tests: bool | None = Field(
        default=None,
        description="While true, merging a branch needs a passing run of every test on its head",
    )

    @model_validator(mode="after")
    def _something(self) -> AgentUpdate:
        if self.name is None and self.merge_requires_passing_tests is None:
            raise ValueError("give name or merge_requires_passing_tests")
        return self


class CommitCreate(_Body):
    branch: Ref = "main"
    config: dict[str, Any] | None = None
    changes: dict[str, Any] | None = Field(
        default=None, description="A JSON Merge Patch (RFC 7396) over the branch head's config"
    )
    revert_to: UUID | None = None
    message: Message = ""
    expected_head: UUID | None = None


class BranchCreate(_Body):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: Annotated[SafeStr, StringConstraints(min_length=1, max_length=64)]
    from_: Ref = Field(default="main", alias="from")


class BranchUpdate(_Body):
    head: UUID
    expected_head: UUID | None = None


class MergeRequest(_Body):
    into: Ref = "main"
    expected_head: UUID | None = None


class ChatMessage(_Body):
    role: Literal["user", "assistant"]
    text: Annotated[SafeStr, StringConstraints(max_length=10_000)]


class ConversationRequest(_Body):
    ref: Ref = "main"
    messages: Annotated[list[ChatMessage], Field(max_length=200)] = []
    params: dict[str, Any] = {}
    contact: Annotated[SafeStr, StringConstraints(min_length=1, max_length=128)] | None = None
    tools: Literal["mock", "run"] = "mock"


class Branch(BaseModel):
    id: UUID
    name: str
    head: UUID
    created_at: datetime
    updated_at: datetime


class Commit(BaseModel):
    id: UUID
    agent_id: UUID
    parents: list[UUID]
    branch: str
    message: str
    author: str
    config: dict[str, Any] | None = Field(default=None, description="Absent in history listings")
    created_at: datetime


class Agent(BaseModel):
    id: UUID
    name: str
    default_branch: Literal["main"] = "main"
    branches: list[Branch]
    config: dict[str, Any] = Field(description="The config of main's head")
    merge_requires_passing_tests: bool = False
    created_at: datetime
    updated_at: datetime


class AgentEnvelope(BaseModel):
    agent: Agent


class AgentCreated(BaseModel):
    agent: Agent
    tools_secret: str


class AgentList(BaseModel):
    agents: list[Agent]
    total_count: int
    page: int
    page_size: int
    total_pages: int


class ToolsSecret(BaseModel):
    tools_secret: str


class CommitEnvelope(BaseModel):
    commit: Commit


class CommitList(BaseModel):
    commits: list[Commit]
    total_count: int
    page: int
    page_size: int
    total_pages: int


class Change(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    path: str
    from_: Any = Field(default=None, alias="from")
    to: Any = None


class Diff(BaseModel):
    changes: list[Change]


class BranchEnvelope(BaseModel):
    branch: Branch


class Deleted(BaseModel):
    success: Literal[True] = True


class ConversationTurn(BaseModel):
    commit_id: UUID
    entries: list[dict[str, Any]]
    ended: bool
