"""Adding recipients to a campaign, from JSON or CSV, and reading them back.

Each row is checked on its own: a bad one is reported with its 1-based row number (for CSV, the
data row after the header) and never stops the others. A number is once per campaign: a number
already in the campaign, or given twice, counts as a duplicate. The rows go in through
``kit.bulk.BulkInsert`` (COPY on PostgreSQL), a whole upload in one transaction, so a 100,000-row
CSV takes seconds. The campaign's row is locked first, so two uploads to one campaign take turns
and cannot both add the same number.
"""

from __future__ import annotations

import csv
import io
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import func
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.campaigns.schemas import RecipientIn, check_zone
from callplane.campaigns.service import CAMPAIGN_NOT_FOUND
from callplane.errors import Conflict, InvalidInput, NotFound
from callplane.kit.bulk import BulkInsert, random_uuid_hexes
from callplane.kit.e164 import phone_number
from callplane.kit.pagination import count, offset
from callplane.kit.schemas import check_json
from callplane.kit.tenancy import select_owned
from callplane.models.base import utcnow
from callplane.models.campaigns import Campaign, CampaignRecipient

SPECIAL = ("phone_number", "timezone", "external_id")
_COLUMNS = (
    "organization_id",
    "id",
    "campaign_id",
    "position",
    "phone_number",
    "params",
    "timezone",
    "external_id",
    "status",
    "attempts",
    "next_attempt_at",
    "call_ids",
    "created_at",
    "updated_at",
)


@dataclass
class Row:
    phone_number: str
    params: dict[str, Any]
    timezone: str | None
    external_id: str | None


@dataclass
class Parsed:
    rows: list[tuple[int, Row]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)

    def reject(self, row: int, error: str) -> None:
        self.rejected.append({"row": row, "error": error})


_zones_seen: dict[str, str | None] = {}


def _zone_error(zone: str) -> str | None:
    if zone not in _zones_seen:
        try:
            check_zone(zone)
            error = None
        except ValueError as exc:
            error = str(exc)
        if len(_zones_seen) < 10_000:
            _zones_seen[zone] = error
        return error
    return _zones_seen[zone]


def _row(raw_number: str, params: dict[str, Any], zone: str | None, external: str | None) -> Row:
    """A checked row, or ValueError with the message for the client."""
    try:
        number = phone_number(raw_number)
    except ValueError as exc:
        raise ValueError(f"phone_number: {exc}") from None
    if zone:
        error = _zone_error(zone)
        if error is not None:
            raise ValueError(f"timezone: {error}")
    if external is not None and len(external) > 255:
        raise ValueError("external_id: must be at most 255 characters")
    return Row(number, params, zone or None, external or None)


def parse_json(document: Any) -> Parsed:
    if not isinstance(document, dict) or set(document) != {"recipients"}:
        raise InvalidInput('body must be {"recipients": [...]}', loc=("body",))
    items = document["recipients"]
    if not isinstance(items, list):
        raise InvalidInput("must be a list", loc=("body", "recipients"))
    if len(items) > 10_000:
        raise InvalidInput(
            "at most 10,000 recipients a request (or send text/csv)", loc=("body", "recipients")
        )
    parsed = Parsed()
    for n, item in enumerate(items, start=1):
        try:
            checked = RecipientIn.model_validate(item)
            check_json(checked.params)
            parsed.rows.append(
                (
                    n,
                    _row(
                        checked.phone_number, checked.params, checked.timezone, checked.external_id
                    ),
                )
            )
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "recipient"
            parsed.reject(n, f"{where}: {first.get('msg', 'is invalid')}")
        except ValueError as exc:
            parsed.reject(n, str(exc))
    return parsed


def _text_of(raw: bytes) -> str:
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if b"\x00" in raw:
        raise InvalidInput("CSV must be text: the body holds NUL bytes", loc=("body",))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"CSV must be UTF-8 text (invalid byte at offset {exc.start})", loc=("body",)
        ) from None


def _delimiter(header_line: str) -> str:
    # Spreadsheets of many locales write ';'; a tab-separated export is common too.
    counts = {d: header_line.count(d) for d in (",", ";", "\t")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


def _records(text: str, delimiter: str) -> Iterator[list[str]]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InvalidInput(
                f"CSV could not be read at line {reader.line_num}: {exc}", loc=("body",)
            ) from None
        yield record


def parse_csv(raw: bytes) -> Parsed:
    text = _text_of(raw)
    if not text.strip():
        raise InvalidInput("CSV is empty: a header row naming phone_number is required")
    first_line = text.split("\n", 1)[0]
    records = _records(text, _delimiter(first_line))
    header = [name.strip() for name in next(records, [])]
    if "phone_number" not in [h.lower() for h in header]:
        raise InvalidInput(
            "CSV must start with a header row naming a phone_number column", loc=("body",)
        )
    seen: set[str] = set()
    for name in header:
        if not name:
            raise InvalidInput("CSV header has an empty column name", loc=("body",))
        key = name.lower() if name.lower() in SPECIAL else name
        if key in seen:
            raise InvalidInput(f"CSV header names the column {name!r} twice", loc=("body",))
        seen.add(key)
    special = {h.lower(): i for i, h in enumerate(header) if h.lower() in SPECIAL}
    number_at, zone_at, external_at = (special.get(name) for name in SPECIAL)
    assert number_at is not None
    param_at = [i for i, h in enumerate(header) if h.lower() not in SPECIAL]
    param_names = [header[i] for i in param_at]
    parsed = Parsed()
    n = 0
    for record in records:
        if not record or (len(record) == 1 and not record[0].strip()):
            continue  # a blank line
        n += 1
        if len(record) != len(header):
            parsed.reject(n, f"has {len(record)} fields; the header has {len(header)}")
            continue
        try:
            params = dict(zip(param_names, [record[i] for i in param_at], strict=True))
            zone = record[zone_at].strip() if zone_at is not None else None
            external = record[external_at].strip() if external_at is not None else None
            parsed.rows.append((n, _row(record[number_at].strip(), params, zone, external)))
        except ValueError as exc:
            parsed.reject(n, str(exc))
    return parsed


async def _open_campaign(
    session: AsyncSession, organization_id: int, campaign_uuid: uuid.UUID
) -> Campaign:
    campaign: Campaign | None = await session.scalar(
        select_owned(Campaign, organization_id)
        .where(Campaign.id == campaign_uuid)
        .with_for_update()
    )
    if campaign is None:
        raise NotFound(CAMPAIGN_NOT_FOUND)
    if campaign.status in ("completed", "cancelled"):
        raise Conflict(f"Recipients cannot be added: the campaign is {campaign.status}")
    return campaign


async def add_recipients(
    session: AsyncSession, organization_id: int, campaign_uuid: uuid.UUID, parsed: Parsed
) -> dict[str, Any]:
    campaign = await _open_campaign(session, organization_id, campaign_uuid)
    existing = set(
        await session.scalars(
            select_owned(CampaignRecipient, organization_id, CampaignRecipient.phone_number).where(
                CampaignRecipient.campaign_id == campaign.id
            )
        )
    )
    last = await session.scalar(
        select_owned(
            CampaignRecipient, organization_id, func.max(CampaignRecipient.position)
        ).where(CampaignRecipient.campaign_id == campaign.id)
    )
    fresh: list[Row] = []
    duplicates = 0
    for _n, row in parsed.rows:
        if row.phone_number in existing:
            duplicates += 1
            continue
        existing.add(row.phone_number)
        fresh.append(row)
    if fresh:
        await _insert(session, organization_id, campaign.id, int(last or 0), fresh, utcnow())
    parsed.rejected.sort(key=lambda r: r["row"])
    return {"added": len(fresh), "duplicates": duplicates, "rejected": parsed.rejected}


async def _insert(
    session: AsyncSession,
    organization_id: int,
    campaign_id: uuid.UUID,
    last_position: int,
    rows: Sequence[Row],
    now: datetime,
) -> None:
    table = CampaignRecipient.__table__
    async with BulkInsert.of(session) as bulk, bulk.indexed_after([table], len(rows)):  # type: ignore[list-item]
        stamp = bulk.timestamp(now)
        campaign = bulk.uuid(campaign_id)
        ids = random_uuid_hexes(len(rows))
        values = [
            (
                organization_id,
                ids[i],
                campaign,
                last_position + 1 + i,
                row.phone_number,
                bulk.json(row.params),
                row.timezone,
                row.external_id,
                "queued",
                0,
                stamp,
                "[]",
                stamp,
                stamp,
            )
            for i, row in enumerate(rows)
        ]
        await bulk.insert(CampaignRecipient.__tablename__, bulk.batch(_COLUMNS, values))


async def list_recipients(
    session: AsyncSession,
    organization_id: int,
    campaign_uuid: uuid.UUID,
    *,
    status: str | None,
    page: int,
    page_size: int,
) -> tuple[Sequence[CampaignRecipient], int]:
    exists = await session.scalar(
        select_owned(Campaign, organization_id, Campaign.id).where(Campaign.id == campaign_uuid)
    )
    if exists is None:
        raise NotFound(CAMPAIGN_NOT_FOUND)
    query = select_owned(CampaignRecipient, organization_id).where(
        CampaignRecipient.campaign_id == campaign_uuid
    )
    if status is not None:
        query = query.where(CampaignRecipient.status == status)
    total = await count(session, query)
    rows = await session.scalars(
        query.order_by(CampaignRecipient.position).limit(page_size).offset(offset(page, page_size))
    )
    return rows.all(), total


async def all_recipients(
    session: AsyncSession, organization_id: int, campaign_uuid: uuid.UUID
) -> Iterator[CampaignRecipient]:
    rows = await session.scalars(
        select_owned(CampaignRecipient, organization_id)
        .where(CampaignRecipient.campaign_id == campaign_uuid)
        .order_by(CampaignRecipient.position)
    )
    return iter(rows.all())


def recipient_wire(recipient: CampaignRecipient) -> dict[str, Any]:
    done = recipient.status not in ("queued", "calling")
    return {
        "id": str(recipient.id),
        "phone_number": recipient.phone_number,
        "params": recipient.params,
        "timezone": recipient.timezone,
        "external_id": recipient.external_id,
        "status": recipient.status,
        "attempts": recipient.attempts,
        "last_outcome": recipient.last_outcome,
        "next_attempt_at": None if done else recipient.next_attempt_at,
        "call_ids": recipient.call_ids,
    }


EXPORT_COLUMNS = (
    "phone_number",
    "external_id",
    "timezone",
    "status",
    "attempts",
    "last_outcome",
    "last_call_id",
    "next_attempt_at",
)


def _cell(text: str) -> str:
    """Client text that a spreadsheet would run as a formula is quoted as text."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def export_csv(recipients: Iterator[CampaignRecipient]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(EXPORT_COLUMNS)
    for r in recipients:
        wire = recipient_wire(r)
        writer.writerow(
            [
                r.phone_number,
                _cell(r.external_id or ""),
                r.timezone or "",
                r.status,
                r.attempts,
                r.last_outcome or "",
                r.call_ids[-1] if r.call_ids else "",
                wire["next_attempt_at"].isoformat() if wire["next_attempt_at"] else "",
            ]
        )
    return out.getvalue()
