"""Calling hours by the recipient's own clock: the next moment a recipient may be called.

Pure functions over the campaign's ``schedule`` (stored with its defaults filled in). A
recipient's zones are its own ``timezone``, else the schedule's zone, else every zone its
number belongs to (``phonenumbers``); with several, a moment is open only when a window is open
in each of them. Local times go through ``zoneinfo``, so daylight saving moves the windows with
the clock: 09:00 in New York is 14:00 UTC in winter and 13:00 in summer.
"""

from __future__ import annotations

import functools
import zoneinfo
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import phonenumbers
from phonenumbers import timezone as number_zones

from callplane.campaigns.schemas import DAYS

Interval = tuple[datetime, datetime]

#: How far ahead the next window is looked for. Windows repeat every week, so nothing opens
#: later than this that did not open before (a shift of daylight saving is an hour).
HORIZON_DAYS = 9
_UTC = zoneinfo.ZoneInfo("UTC")


@functools.lru_cache(maxsize=4096)
def zones_of_number(phone_number: str) -> tuple[str, ...]:
    """The IANA zones of an E.164 number (UTC when the number tells none)."""
    try:
        parsed = phonenumbers.parse(phone_number, None)
    except phonenumbers.NumberParseException:
        return ("UTC",)
    zones = tuple(
        z for z in number_zones.time_zones_for_number(parsed) if z != number_zones.UNKNOWN_TIMEZONE
    )
    return zones or ("UTC",)


@functools.lru_cache(maxsize=1024)
def _zone(key: str) -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(key)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return _UTC


def recipient_zones(
    schedule: Mapping[str, Any], phone_number: str, timezone: str | None
) -> tuple[str, ...]:
    if timezone:
        return (timezone,)
    if schedule.get("timezone", "recipient") != "recipient":
        return (str(schedule["timezone"]),)
    return zones_of_number(phone_number)


def _open_in_zone(zone: str, windows: Sequence[Mapping[str, Any]], around: date) -> list[Interval]:
    tz = _zone(zone)
    found: list[Interval] = []
    for offset in range(-1, HORIZON_DAYS + 1):
        day = around + timedelta(days=offset)
        name = DAYS[day.weekday()]
        for window in windows:
            if name not in window["days"]:
                continue
            start = datetime.combine(day, time.fromisoformat(window["start"]), tzinfo=tz)
            end = datetime.combine(day, time.fromisoformat(window["end"]), tzinfo=tz)
            found.append((start.astimezone(UTC), end.astimezone(UTC)))
    return _merged(found)


def _merged(intervals: Iterable[Interval]) -> list[Interval]:
    merged: list[Interval] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _intersected(a: list[Interval], b: list[Interval]) -> list[Interval]:
    out: list[Interval] = []
    i = j = 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def next_open(
    schedule: Mapping[str, Any], zones: Sequence[str], after: datetime
) -> datetime | None:
    """The first moment at or after ``after`` inside the schedule (its windows in every zone,
    ``start_at``, ``end_at``), or None when there is none (past ``end_at``, or windows that never
    overlap in all the zones)."""
    after = after.astimezone(UTC)
    start_at = instant(schedule.get("start_at"))
    end_at = instant(schedule.get("end_at"))
    if start_at is not None and after < start_at:
        after = start_at
    if end_at is not None and after >= end_at:
        return None
    around = after.date()
    open_: list[Interval] | None = None
    for zone in dict.fromkeys(zones):
        intervals = _open_in_zone(zone, schedule["windows"], around)
        open_ = intervals if open_ is None else _intersected(open_, intervals)
    for start, end in open_ or []:
        if end <= after:
            continue
        moment = max(start, after)
        if end_at is not None and moment >= end_at:
            return None
        return moment
    return None


def instant(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)
