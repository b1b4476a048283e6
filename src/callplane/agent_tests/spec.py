"""Wire models of a test and of the requests that run tests (docs/agent-tests.md).

Pydantic names the JSON path of every bad value (``expect.said.0: ...``). Patterns are
compiled here with the ``regex`` library, which is also what matches them: matching runs with a
time limit (``checks.py``), so a pattern that backtracks catastrophically fails its test
instead of holding a worker.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

import regex
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from callplane.agents.schemas import Ref
from callplane.errors import InvalidInput
from callplane.kit.messages import field_messages
from callplane.kit.schemas import SafeStr

TestName = Annotated[
    SafeStr, StringConstraints(min_length=1, max_length=100, pattern=r"^[^/\s][^/]*$")
]
Line = Annotated[SafeStr, StringConstraints(min_length=1, max_length=2_000)]


def _compiles(pattern: str) -> str:
    try:
        regex.compile(pattern)
    except regex.error as exc:
        raise ValueError(f"not a regular expression ({exc})") from None
    return pattern


Pattern = Annotated[str, StringConstraints(min_length=1, max_length=500), AfterValidator(_compiles)]


def _one_or_many(value: object) -> object:
    return [value] if isinstance(value, str) else value


Patterns = Annotated[list[Pattern], BeforeValidator(_one_or_many), Field(max_length=20)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Turn(_Body):
    user: Line


class Caller(_Body):
    persona: Annotated[SafeStr, StringConstraints(min_length=1, max_length=2_000)]
    goal: Annotated[SafeStr, StringConstraints(min_length=1, max_length=2_000)]
    max_turns: Annotated[int, Field(ge=1, le=30)] = 10


class ExpectedToolCall(_Body):
    name: Annotated[SafeStr, StringConstraints(min_length=1, max_length=64)]
    arguments: dict[str, Any] = {}


class Expect(_Body):
    tool_calls: Annotated[list[ExpectedToolCall], Field(max_length=20)] = []
    not_tool_calls: Annotated[
        list[Annotated[SafeStr, StringConstraints(min_length=1, max_length=64)]],
        Field(max_length=20),
    ] = []
    said: Patterns = []
    not_said: Patterns = []
    ended: bool | None = None
    transferred: bool | None = None
    opted_out: bool | None = None
    max_reply_ms: Annotated[int, Field(ge=1, le=600_000)] | None = None


class TestSpec(_Body):
    """A test without its name: what is stored, and what a run snapshots."""

    turns: Annotated[list[Turn], Field(min_length=1, max_length=30)] | None = None
    caller: Caller | None = None
    params: dict[str, Any] = {}
    contact: Annotated[SafeStr, StringConstraints(min_length=1, max_length=128)] | None = None
    mocks: Annotated[dict[str, Any], Field(max_length=32)] = {}
    expect: Expect = Expect()
    judge: Annotated[
        list[Annotated[SafeStr, StringConstraints(min_length=1, max_length=1_000)]],
        Field(max_length=10),
    ] = []
    repeat: Annotated[int, Field(ge=1, le=20)] = 1
    pass_rate: Annotated[float, Field(ge=0, le=1)] = 1.0

    @model_validator(mode="after")
    def _one_caller(self) -> TestSpec:
        if (self.turns is None) == (self.caller is None):
            raise ValueError("give either turns or caller")
        return self


class TestCreate(TestSpec):
    name: TestName


class TestUpdate(_Body):
    """Only the keys given change; the result is validated as a whole test."""

    name: TestName | None = None
    turns: list[Any] | None = None
    caller: dict[str, Any] | None = None
    params: dict[str, Any] | None = None
    contact: str | None = None
    mocks: dict[str, Any] | None = None
    expect: dict[str, Any] | None = None
    judge: list[Any] | None = None
    repeat: int | None = None
    pass_rate: float | None = None


def validate_spec(document: dict[str, Any]) -> dict[str, Any]:
    """A test's spec as stored, or InvalidInput naming the path of the first bad value."""
    try:
        spec = TestSpec.model_validate(document)
    except ValidationError as exc:
        messages = field_messages(exc.errors(include_input=False, include_url=False))
        failure = InvalidInput(messages[0])
        failure.errors = messages[:20]
        raise failure from None
    return spec.model_dump(mode="json", exclude_none=True)


class Test(BaseModel):
    id: UUID
    name: str
    turns: list[Turn] | None = None
    caller: Caller | None = None
    params: dict[str, Any]
    contact: str | None = None
    mocks: dict[str, Any]
    expect: dict[str, Any]
    judge: list[str]
    repeat: int
    pass_rate: float
    created_at: datetime
    updated_at: datetime


class TestEnvelope(BaseModel):
    test: Test


class TestList(BaseModel):
    tests: list[Test]


class RunCreate(_Body):
    ref: Ref = "main"
    tests: Annotated[list[TestName], Field(min_length=1, max_length=500)] | None = None
    mode: Literal["text", "audio"] = "text"


class RunOfTest(BaseModel):
    passed: bool
    failures: list[str]
    transcript: list[dict[str, Any]]
    reply_ms: list[int]


class TestResult(BaseModel):
    test: str
    passed: bool
    pass_rate: float
    runs: list[RunOfTest]


class TestRun(BaseModel):
    id: UUID
    ref: str
    commit_id: UUID
    mode: Literal["text", "audio"]
    status: Literal["running", "passed", "failed", "error"]
    results: list[TestResult]
    error: str | None = Field(default=None, description="Why the run is `error`")
    started_at: datetime
    finished_at: datetime | None


class TestRunEnvelope(BaseModel):
    test_run: TestRun


class TestRunList(BaseModel):
    test_runs: list[TestRun]
    total_count: int
    page: int
    page_size: int
    total_pages: int


class ReplayCreate(_Body):
    ref: Ref = "main"
    call_ids: Annotated[list[UUID], Field(min_length=1, max_length=100)] | None = None
    last: Annotated[int, Field(ge=1, le=100)] | None = None

    @model_validator(mode="after")
    def _one_source(self) -> ReplayCreate:
        if (self.call_ids is None) == (self.last is None):
            raise ValueError("give either call_ids or last")
        return self


class ToolCallsBeforeAfter(BaseModel):
    before: list[dict[str, Any]]
    after: list[dict[str, Any]]


class EndedBeforeAfter(BaseModel):
    before: bool
    after: bool


class ReplayedCall(BaseModel):
    call_id: UUID
    original_commit_id: str | None
    same_tool_calls: bool
    tool_calls: ToolCallsBeforeAfter
    ended: EndedBeforeAfter
    transcript_after: list[dict[str, Any]]
    summary_after: str | None


class Replay(BaseModel):
    id: UUID
    ref: str
    commit_id: UUID
    status: Literal["running", "done", "error"]
    calls: list[ReplayedCall]
    error: str | None = None
    started_at: datetime
    finished_at: datetime | None


class ReplayEnvelope(BaseModel):
    replay: Replay
