"""Wire models of contact data (SPEC "Contact data record"; docs/api-contract.md#contact-data for
the extensions).

The request body is validated by ``service.parse_write`` (exact JSON rules: an integral float is
an integer, a boolean is not); ``ContactDataWrite`` describes it for OpenAPI.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from callplane.contacts.service import (
    DATA_MAX_BYTES,
    REVISION_MAX,
    TTL_MAX_SECONDS,
    TTL_MIN_SECONDS,
    StoredData,
    remaining_ttl,
)

_ORJSON_OPTIONS = orjson.OPT_UTC_Z


class ContactData(BaseModel):
    phoneNumber: str = Field(
        description="E.164 phone number, or the identifier exactly as sent when not a phone number"
    )
    data: dict[str, Any] = Field(description="The stored JSON object")
    revision: int = Field(ge=1)
    ttlSeconds: int | None = Field(
        description="Remaining seconds to live, rounded up; null when the data does not expire"
    )
    expiresAt: datetime | None = Field(description="null when the data does not expire")


class ContactDataWrite(BaseModel):
    model_config = ConfigDict(extra="allow")

    data: dict[str, Any] = Field(
        description=f"Replaces the whole stored object; compact UTF-8 JSON of at most "
        f"{DATA_MAX_BYTES} bytes"
    )
    ttlSeconds: int | None = Field(
        default=None,
        ge=TTL_MIN_SECONDS,
        le=TTL_MAX_SECONDS,
        description="Seconds until the data expires; absent or null: never",
    )
    expectedRevision: int | None = Field(
        default=None,
        ge=0,
        le=REVISION_MAX,
        description="Extension: apply only if the stored revision is this one (0: no stored "
        "data), else 409",
    )


class ContactSummary(BaseModel):
    phoneNumber: str
    revision: int
    expiresAt: datetime | None
    created_at: datetime
    updated_at: datetime


class ContactList(BaseModel):
    contacts: list[ContactSummary]
    total_count: int
    page: int
    page_size: int
    total_pages: int


class Deleted(BaseModel):
    success: bool = True


def contact_data_json(stored: StoredData, now: datetime) -> bytes:
    """The Contact data record, with the stored JSON text spliced in as it is (never re-parsed)."""
    return orjson.dumps(
        {
            "phoneNumber": stored.identifier,
            "data": orjson.Fragment(stored.data_json),
            "revision": stored.revision,
            "ttlSeconds": remaining_ttl(stored.expires_at, now),
            "expiresAt": stored.expires_at,
        },
        option=_ORJSON_OPTIONS,
    )
