"""The API's resources (SPEC "Resources and their fields"; docs/api-contract.md,
docs/engine-core.md) as lenient models.

String fields with a documented set of values (``Call.status``) are plain strings, so values a
newer server adds pass through; the known ones are listed in ``CallStatus`` and friends.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from callplane_client._model import Model

T = TypeVar("T")


class CallStatus:
    ENQUEUED = "enqueued"
    DIALING = "dialing"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    FAILED = "failed"
    NO_ANSWER = "no_answer"
    BUSY = "busy"
    CANCELLED = "cancelled"


class TranscriptEntry(Model):
    text: str | None
    role: str | None
    timestamp: float | None
    function_name: str | None
    arguments: dict[str, Any] | None


class CallTagSummary(Model):
    id: str
    name: str | None
    description: str | None
    color: str | None


class Call(Model):
    id: str
    simple_uuid: str | None
    from_number: str | None
    to_number: str | None
    status: str
    direction: str | None
    started_at: str | None
    ended_at: str | None
    duration: int | None
    created_at: str
    updated_at: str
    transcripts: list[TranscriptEntry] | None
    screen_pop_token: str | None
    call_prompt: str | None
    first_message: str | None
    answered_by: str | None
    language: str | None
    transferred: bool | None
    handoff_metadata: dict[str, Any] | None
    tags: list[CallTagSummary] | None
    voice_id: str | None
    agent_speaks_first: bool | None
    agent_id: str | None
    external_identifiers: dict[str, Any] | None
    params: dict[str, Any] | None
    recording_presigned_url: str | None
    analyzers: list[dict[str, Any]] | None
    analysis_results: list[dict[str, Any]] | None
    summary: str | None
    keyterms: list[str] | None


class CancelResult(Model):
    success: bool
    status: str
    uuid: str


class CallEvent(Model):
    sequence: int
    type: str
    at: str
    data: dict[str, Any]


class CallTag(Model):
    id: str
    uuid: str | None
    name: str
    description: str | None
    color: str | None
    always_enabled: bool | None
    created_at: str
    updated_at: str


class Voice(Model):
    id: str
    name: str
    languages: list[str] | None
    organization_id: int | None
    description: str | None
    tags: list[str] | None
    created_at: str
    updated_at: str
    #: "espeak-ng:en-us", "piper:en_US-joe-medium"; None: the server's default.
    engine: str | None


class AgentRef(Model):
    """The agent a phone number routes to, and the branch whose head inbound calls run."""

    id: int
    name: str | None
    uuid: str | None
    branch: str | None


class PhoneNumber(Model):
    id: str
    number: str
    friendly_name: str | None
    area_code: str | None
    country: str | None
    agent: AgentRef | None
    created_at: str
    updated_at: str


class ContactData(Model):
    phoneNumber: str  # noqa: N815 - the wire name
    data: dict[str, Any]
    revision: int
    ttlSeconds: int | None  # noqa: N815
    expiresAt: str | None  # noqa: N815


class Contact(Model):
    phoneNumber: str  # noqa: N815
    revision: int
    expiresAt: str | None  # noqa: N815
    created_at: str
    updated_at: str


class Column(Model):
    name: str
    type: str
    required: bool | None
    unique: bool | None
    indexed: bool | None
    references: str | None


class Table(Model):
    id: int
    name: str
    columns: list[Column]
    created_at: str
    updated_at: str


class Record(Model):
    """A custom data record: ``id``, ``organization_id``, timestamps, one field per column."""

    id: int
    organization_id: int
    created_at: str
    updated_at: str


class FeedbackNote(Model):
    author_name: str
    note_text: str
    created_at: str


class FeedbackEntry(Model):
    uuid: str
    call_id: str
    transcript_index: int | None
    comment: str | None
    resolved: bool
    resolved_at: str | None
    notes: list[FeedbackNote]
    created_at: str
    updated_at: str


class RecordingTranscriptEntry(Model):
    speaker: str | None
    text: str
    start: float | None
    end: float | None
    confidence: float | None
    channel: str | None


class Recording(Model):
    id: str
    file_name: str | None
    status: str
    started_at: str | None
    transcript: list[RecordingTranscriptEntry] | None
    summary: str | None
    created_at: str
    updated_at: str


class Source(Model):
    id: str | None
    name: str | None
    provider: str | None


class ExternalCall(Model):
    id: str
    external_call_id: str | None
    title: str | None
    direction: str | None
    from_number: str | None
    to_number: str | None
    duration_seconds: int | None
    started_at: str | None
    status: str
    recording_count: int
    source: Source | None
    created_at: str
    updated_at: str
    recording_presigned_urls: list[str]
    recordings: list[Recording]


class Webhook(Model):
    id: str
    url: str
    events: list[str]
    description: str | None
    enabled: bool
    secret: str | None  # only in the answer to webhooks.create
    created_at: str


class Delivery(Model):
    id: str
    event_id: str
    type: str
    attempt: int
    status_code: int | None
    error: str | None
    duration_ms: int | None
    created_at: str
    next_attempt_at: str | None
    delivered: bool


class Branch(Model):
    id: str
    name: str
    head: str
    created_at: str
    updated_at: str


class Agent(Model):
    """An agent (docs/agents.md): its branches and the config of main's head."""

    id: str
    name: str
    default_branch: str
    branches: list[Branch]
    config: dict[str, Any]
    merge_requires_passing_tests: bool
    created_at: str
    updated_at: str


class AgentTest(Model):
    """A test of an agent (docs/agent-tests.md)."""

    id: str
    name: str
    turns: list[dict[str, Any]] | None
    caller: dict[str, Any] | None
    params: dict[str, Any]
    contact: str | None
    mocks: dict[str, Any]
    expect: dict[str, Any]
    judge: list[str]
    repeat: int
    pass_rate: float
    created_at: str
    updated_at: str


class TestRunOfTest(Model):
    """One repetition of a test: its failures, transcript and reply latencies (audio)."""

    __test__ = False
    passed: bool
    failures: list[str]
    transcript: list[TranscriptEntry]
    reply_ms: list[int]


class TestResult(Model):
    __test__ = False
    test: str
    passed: bool
    pass_rate: float
    runs: list[TestRunOfTest]


class TestRun(Model):
    """A run of an agent's tests on one commit: ``running``, then ``passed``, ``failed`` or
    ``error`` (with ``error`` saying why)."""

    __test__ = False
    id: str
    ref: str
    commit_id: str
    mode: str
    status: str
    results: list[TestResult]
    error: str | None
    started_at: str
    finished_at: str | None


class Replay(Model):
    """Real calls replayed against a commit; ``calls`` compares each, once ``status`` is
    ``done``."""

    id: str
    ref: str
    commit_id: str
    status: str
    calls: list[dict[str, Any]]
    error: str | None
    started_at: str
    finished_at: str | None


class Traffic(Model):
    """The agent's traffic split: ``[{"branch", "weight"}]`` (empty: every call runs main)."""

    splits: list[dict[str, Any]]


class AgentCreated(Model):
    """A new agent and its tools secret (shown only at creation)."""

    agent: Agent
    tools_secret: str


class WebCallToken(Model):
    """A single-use token a web page starts one web call with (at most 300 s)."""

    token: str
    expires_at: str


class WebCall(Model):
    """A web call answered: its call id and the SDP answer for the browser."""

    call_id: str
    sdp: str


class Commit(Model):
    """An immutable commit; ``config`` is absent in history listings."""

    id: str
    agent_id: str
    parents: list[str]
    branch: str
    message: str
    author: str
    config: dict[str, Any] | None
    created_at: str


class Change(Model):
    """One difference of a diff: ``from``/``to`` are absent where the path is absent (read them
    with ``change.get("from")``, ``"from" in change``)."""

    path: str
    to: Any

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)


class ConversationTurn(Model):
    commit_id: str
    entries: list[TranscriptEntry]
    ended: bool


class CampaignCounts(Model):
    total: int
    queued: int
    calling: int
    completed: int
    voicemail: int
    exhausted: int
    suppressed: int
    opted_out: int
    expired: int
    cancelled: int
    attempts: int


class Campaign(Model):
    """An outbound calling program; ``status`` is draft, running, paused, completed or
    cancelled."""

    id: str
    name: str
    agent_id: str | None
    agent_branch_name: str | None
    agent_commit_id: str | None
    from_number: str | None
    params: dict[str, Any]
    status: str
    schedule: dict[str, Any]
    retry: dict[str, Any]
    pacing: dict[str, Any]
    counts: CampaignCounts
    created_at: str
    started_at: str | None
    finished_at: str | None


class Recipient(Model):
    id: str
    phone_number: str
    params: dict[str, Any]
    timezone: str | None
    external_id: str | None
    status: str
    attempts: int
    last_outcome: str | None
    next_attempt_at: str | None
    call_ids: list[str]


class RecipientsAdded(Model):
    """``rejected`` rows are ``{"row", "error"}`` (row numbers from 1)."""

    added: int
    duplicates: int
    rejected: list[dict[str, Any]]


class Suppression(Model):
    phone_number: str
    reason: str | None
    created_at: str


class KnowledgeBase(Model):
    """Documents an agent can look things up in, stemmed in ``language``."""

    id: str
    name: str
    language: str
    document_count: int
    created_at: str
    updated_at: str


class KnowledgeDocument(Model):
    """A document of a knowledge base (its text is in its chunks, found by search)."""

    id: str
    knowledge_base_id: str
    title: str
    url: str | None
    content_type: str
    characters: int
    chunk_count: int
    created_at: str


class SearchResult(Model):
    """A chunk a search found: the document, its title path, the text, the engine's score."""

    document_id: str
    title: str
    text: str
    score: float


class Result(Model):
    """The answer of an operation that returns no resource (``{"success": true, ...}``)."""

    success: bool
    message: str | None
    deleted_count: int | None
    event_id: str | None


@dataclass
class Page(Generic[T]):
    """One page of a list: its items and the counts the server gave (``per_page`` for records,
    ``page_size`` elsewhere; both are set). Iterating a page walks its items."""

    items: list[T]
    total_count: int
    page: int
    page_size: int
    total_pages: int | None
    body: dict[str, Any] = field(repr=False)

    @property
    def per_page(self) -> int:
        return self.page_size

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)
