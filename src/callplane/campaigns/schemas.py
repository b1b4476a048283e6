"""Wire models of campaigns, recipients and suppressions (``docs/campaigns.md``).

A campaign's ``schedule``, ``retry`` and ``pacing`` are stored and shown with every default
filled in; a request may give any part of them.
"""

from __future__ import annotations

import re
import zoneinfo
from datetime import datetime, time
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from callplane.kit.schemas import Attributes, PhoneNumber, SafeStr, UtcTimestamp

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
#: The legal calling hours, local time: not a setting.
EARLIEST = time(8, 0)
LATEST = time(21, 0)
OUTCOMES = ("busy", "no_answer", "failed", "voicemail")
RecipientStatus = Literal[
    "queued",
    "calling",
    "completed",
    "voicemail",
    "exhausted",
    "suppressed",
    "opted_out",
    "expired",
    "cancelled",
]
_ZONE_TEXT = re.compile(r"^[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*$")


def check_zone(value: str) -> str:
    """An IANA zone that ``zoneinfo`` knows (``Mars/Olympus`` is not one)."""
    if len(value) > 64 or not _ZONE_TEXT.match(value):
        raise ValueError(f"unknown time zone {value[:64]!r}")
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(f"unknown time zone {value!r}") from None
    return value


def _clock(value: str) -> str:
    match = re.fullmatch(r"(\d{2}):(\d{2})", value)
    if match is None or int(match[1]) > 23 or int(match[2]) > 59:
        raise ValueError(f"must be a time of day HH:MM (00:00 to 23:59), not {value[:16]!r}")
    return value


Zone = Annotated[str, StringConstraints(max_length=64), AfterValidator(check_zone)]
Clock = Annotated[str, StringConstraints(max_length=16), AfterValidator(_clock)]
Day = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
WEEKDAYS: list[Day] = ["mon", "tue", "wed", "thu", "fri"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Window(_Body):
    days: Annotated[list[Day], Field(min_length=1, max_length=7)] = Field(
        default_factory=lambda: list(WEEKDAYS)
    )
    start: Clock = "09:00"
    end: Clock = "17:00"

    @model_validator(mode="after")
    def _legal(self) -> Window:
        start, end = time.fromisoformat(self.start), time.fromisoformat(self.end)
        if start < EARLIEST or end > LATEST:
            raise ValueError("calls may only be placed between 08:00 and 21:00 local time")
        if start >= end:
            raise ValueError("start must be before end")
        self.days = sorted(set(self.days), key=DAYS.index)
        return self


class Schedule(_Body):
    timezone: Literal["recipient"] | Zone = "recipient"
    windows: Annotated[list[Window], Field(min_length=1, max_length=21)] = Field(
        default_factory=lambda: [Window()]
    )
    start_at: UtcTimestamp | None = None
    end_at: UtcTimestamp | None = None

    @model_validator(mode="after")
    def _ordered(self) -> Schedule:
        if self.start_at and self.end_at and self.end_at <= self.start_at:
            raise ValueError("end_at must be after start_at")
        return self


class Retry(_Body):
    max_attempts: Annotated[int, Field(ge=1, le=10, strict=True)] = 3
    on: Annotated[
        list[Literal["busy", "no_answer", "failed", "voicemail"]], Field(max_length=4)
    ] = [
        "busy",
        "no_answer",
        "failed",
    ]
    delay_seconds: Annotated[int, Field(ge=10, le=604_800, strict=True)] = 3600

    @field_validator("on")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        return sorted(set(value), key=OUTCOMES.index)


class Pacing(_Body):
    max_concurrent: Annotated[int, Field(ge=1, le=1_000, strict=True)] = 5
    calls_per_minute: Annotated[int, Field(ge=1, le=6_000, strict=True)] = 60


Name = Annotated[SafeStr, StringConstraints(min_length=1, max_length=255)]


class CampaignCreate(_Body):
    name: Name
    agent_id: UUID
    agent_branch_name: Annotated[SafeStr, StringConstraints(min_length=1, max_length=63)] | None = (
        None
    )
    agent_commit_id: UUID | None = None
    from_number: PhoneNumber | None = None
    params: Attributes = {}
    schedule: Schedule = Field(default_factory=Schedule)
    retry: Retry = Field(default_factory=Retry)
    pacing: Pacing = Field(default_factory=Pacing)

    @model_validator(mode="after")
    def _one_ref(self) -> CampaignCreate:
        if self.agent_branch_name is not None and self.agent_commit_id is not None:
            raise ValueError("give agent_branch_name or agent_commit_id, not both")
        return self


class CampaignUpdate(_Body):
    name: Name | None = None
    schedule: Schedule | None = None
    retry: Retry | None = None
    pacing: Pacing | None = None


class RecipientIn(_Body):
    phone_number: Annotated[str, StringConstraints(max_length=64)]
    params: dict[str, Any] = {}
    timezone: Zone | None = None
    external_id: Annotated[SafeStr, StringConstraints(max_length=255)] | None = None


class RecipientsIn(_Body):
    recipients: Annotated[list[dict[str, Any]], Field(max_length=10_000)]


class Counts(BaseModel):
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


class Campaign(BaseModel):
    id: UUID
    name: str
    agent_id: UUID | None
    agent_branch_name: str | None
    agent_commit_id: UUID | None
    from_number: str | None
    params: dict[str, Any]
    status: Literal["draft", "running", "paused", "completed", "cancelled"]
    schedule: Schedule
    retry: Retry
    pacing: Pacing
    counts: Counts
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class CampaignEnvelope(BaseModel):
    campaign: Campaign


class CampaignList(BaseModel):
    campaigns: list[Campaign]
    total_count: int
    page: int
    page_size: int
    total_pages: int


class Recipient(BaseModel):
    id: UUID
    phone_number: str
    params: dict[str, Any]
    timezone: str | None
    external_id: str | None
    status: RecipientStatus
    attempts: int
    last_outcome: Literal["human", "voicemail", "busy", "no_answer", "failed"] | None
    next_attempt_at: datetime | None
    call_ids: list[UUID]


class RecipientList(BaseModel):
    recipients: list[Recipient]
    total_count: int
    page: int
    page_size: int
    total_pages: int


class Rejected(BaseModel):
    row: int = Field(description="1-based; for CSV, the data row after the header")
    error: str


class Added(BaseModel):
    added: int
    duplicates: int
    rejected: list[Rejected]


class SuppressionCreate(_Body):
    phone_number: PhoneNumber
    reason: Annotated[SafeStr, StringConstraints(max_length=1_000)] | None = None


class Suppression(BaseModel):
    phone_number: str
    reason: str | None
    created_at: datetime


class SuppressionEnvelope(BaseModel):
    suppression: Suppression


class SuppressionList(BaseModel):
    suppressions: list[Suppression]
    total_count: int
    page: int
    page_size: int
    total_pages: int
