"""Calling hours by the recipient's own clock: the pure function that finds the next open
moment, across daylight-saving changes and several zones."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from callplane.campaigns.hours import next_open, recipient_zones, zones_of_number
from callplane.campaigns.schemas import Schedule

WEEKDAYS_9_TO_17 = Schedule().model_dump(mode="json")
EVERY_DAY_9_TO_17 = Schedule.model_validate(
    {"windows": [{"days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]}]}
).model_dump(mode="json")


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_inside_a_window_is_now() -> None:
    # Tuesday 2026-01-13 15:00 UTC is 10:00 in New York (EST, UTC-5).
    now = at("2026-01-13T15:00:00")
    assert next_open(WEEKDAYS_9_TO_17, ["America/New_York"], now) == now


def test_before_the_window_waits_for_its_start() -> None:
    # 12:00 UTC is 07:00 in New York: the window opens at 09:00 EST = 14:00 UTC.
    assert next_open(WEEKDAYS_9_TO_17, ["America/New_York"], at("2026-01-13T12:00:00")) == at(
        "2026-01-13T14:00:00"
    )


def test_friday_evening_waits_for_monday() -> None:
    # Friday 2026-01-16 23:00 UTC = 18:00 EST: next is Monday 09:00 EST.
    assert next_open(WEEKDAYS_9_TO_17, ["America/New_York"], at("2026-01-16T23:00:00")) == at(
        "2026-01-19T14:00:00"
    )


def test_the_window_follows_daylight_saving_in_spring() -> None:
    # DST starts in the US on Sunday 2026-03-08: on Friday 09:00 EST is 14:00 UTC, on Monday
    # 09:00 EDT is 13:00 UTC.
    assert next_open(EVERY_DAY_9_TO_17, ["America/New_York"], at("2026-03-06T11:00:00")) == at(
        "2026-03-06T14:00:00"
    )
    assert next_open(EVERY_DAY_9_TO_17, ["America/New_York"], at("2026-03-09T11:00:00")) == at(
        "2026-03-09T13:00:00"
    )
    # The day of the change itself: 09:00 EDT.
    assert next_open(EVERY_DAY_9_TO_17, ["America/New_York"], at("2026-03-08T05:00:00")) == at(
        "2026-03-08T13:00:00"
    )


def test_the_window_follows_daylight_saving_in_autumn() -> None:
    # Europe leaves summer time on Sunday 2026-10-25: 09:00 in Paris is 07:00 UTC before and
    # 08:00 UTC after; 17:00 closes at 15:00 and 16:00 UTC.
    assert next_open(EVERY_DAY_9_TO_17, ["Europe/Paris"], at("2026-10-24T15:30:00")) == at(
        "2026-10-25T08:00:00"
    )
    assert next_open(EVERY_DAY_9_TO_17, ["Europe/Paris"], at("2026-10-25T15:30:00")) == at(
        "2026-10-25T15:30:00"
    )


def test_several_zones_need_the_window_open_in_all() -> None:
    # New York 09:00–17:00 EST is 14–22 UTC; Los Angeles 09:00–17:00 PST is 17–01 UTC: both
    # from 17:00 UTC.
    zones = ["America/New_York", "America/Los_Angeles"]
    assert next_open(WEEKDAYS_9_TO_17, zones, at("2026-01-13T15:00:00")) == at(
        "2026-01-13T17:00:00"
    )
    # Tokyo and New York never share 09:00–17:00: no moment at all.
    assert (
        next_open(WEEKDAYS_9_TO_17, ["Asia/Tokyo", "America/New_York"], at("2026-01-13T00:00:00"))
        is None
    )


def test_start_at_and_end_at_bound_the_schedule() -> None:
    schedule: dict[str, Any] = {
        **EVERY_DAY_9_TO_17,
        "start_at": "2026-01-20T00:00:00Z",
        "end_at": "2026-01-21T15:00:00Z",
    }
    assert next_open(schedule, ["UTC"], at("2026-01-13T10:00:00")) == at("2026-01-20T09:00:00")
    assert next_open(schedule, ["UTC"], at("2026-01-21T14:00:00")) == at("2026-01-21T14:00:00")
    assert next_open(schedule, ["UTC"], at("2026-01-21T15:00:00")) is None
    assert next_open(schedule, ["UTC"], at("2026-01-21T20:00:00")) is None


def test_zones_come_from_the_recipient_then_the_schedule_then_the_number() -> None:
    assert zones_of_number("+33612345678") == ("Europe/Paris",)
    assert zones_of_number("+15550000001") == ("UTC",)  # the number tells none
    assert len(zones_of_number("+1 800 555 0100".replace(" ", ""))) > 1
    by_number = recipient_zones(WEEKDAYS_9_TO_17, "+33612345678", None)
    assert by_number == ("Europe/Paris",)
    assert recipient_zones(WEEKDAYS_9_TO_17, "+33612345678", "Asia/Tokyo") == ("Asia/Tokyo",)
    fixed = {**WEEKDAYS_9_TO_17, "timezone": "Europe/Berlin"}
    assert recipient_zones(fixed, "+33612345678", None) == ("Europe/Berlin",)


def test_the_e164_shortcut_agrees_with_phonenumbers() -> None:
    import random

    from callplane.kit import e164

    rng = random.Random(7)
    for _ in range(3000):
        text = "+1" + str(rng.randint(2, 9)) + "".join(str(rng.randint(0, 9)) for _ in range(9))
        assert e164.phone_number(text) == e164.e164(text) == text
    for refused in ("+10125550100", "+11125550100", "+1212555010", "+121255501000"):
        assert not e164._NANP_E164.fullmatch(refused)
