"""Wire models of webhooks (docs/api-contract.md#webhooks)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from callplane.kit.schemas import SafeStr
from callplane.webhooks.events import EVENT_TYPES

MAX_URL_CHARS = 2048


def _check_url(value: str) -> str:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        raise ValueError("is not a valid URL") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError("must be an http or https URL")
    if not parts.hostname:
        raise ValueError("must name a host")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not carry credentials")
    if any(c.isspace() for c in value):
        raise ValueError("must not contain spaces")
    return value


def _check_events(value: list[str]) -> list[str]:
    unknown = [e for e in value if e not in EVENT_TYPES]
    if unknown:
        raise ValueError(f"unknown event type {unknown[0]}; known: {', '.join(EVENT_TYPES)}")
    return list(dict.fromkeys(value))


WebhookURL = Annotated[
    SafeStr, StringConstraints(min_length=1, max_length=MAX_URL_CHARS), AfterValidator(_check_url)
]


class WebhookCreate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    url: WebhookURL
    events: Annotated[list[str], Field(max_length=50), AfterValidator(_check_events)] | None = None
    description: Annotated[SafeStr, StringConstraints(max_length=1000)] | None = None


class WebhookUpdate(BaseModel):
    """Fields to change; omitted fields stay. ``events: null`` sends every type again,
    ``description: null`` clears it."""

    model_config = ConfigDict(extra="ignore")

    url: WebhookURL | None = None
    events: Annotated[list[str], Field(max_length=50), AfterValidator(_check_events)] | None = None
    description: Annotated[SafeStr, StringConstraints(max_length=1000)] | None = None
    enabled: bool | None = None


class Webhook(BaseModel):
    id: UUID
    url: str
    events: list[str] = Field(description="Event types sent; every type when created without")
    description: str | None
    enabled: bool
    created_at: datetime


class WebhookOne(BaseModel):
    webhook: Webhook


class WebhookWithSecret(Webhook):
    secret: str = Field(description="whsec_...: verify signatures with it; shown only once")


class WebhookCreated(BaseModel):
    webhook: WebhookWithSecret


class WebhookList(BaseModel):
    webhooks: list[Webhook]


class Delivery(BaseModel):
    id: UUID
    event_id: str
    type: str
    attempt: int
    status_code: int | None
    error: str | None
    duration_ms: int | None
    created_at: datetime
    next_attempt_at: datetime | None
    delivered: bool


class DeliveryList(BaseModel):
    deliveries: list[Delivery]
    total_count: int
    page: int
    page_size: int
    total_pages: int


class Accepted(BaseModel):
    success: Literal[True] = True


class TestSent(BaseModel):
    success: Literal[True] = True
    event_id: str


class Deleted(BaseModel):
    success: Literal[True] = True
