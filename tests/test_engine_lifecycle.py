"""The call engine moves calls through the lifecycle of docs/engine-core.md (simulated
telephony)."""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.conftest import client_for
from tests.engine_support import (
    create_call,
    engine_app,
    events_of,
    wait_for_call,
    wait_for_event,
)
from tests.factories import make_org
from tests.test_calls_helpers import assert_status_error


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def test_an_answered_call_completes_with_timestamps_duration_and_transcript(make_app):
    app = await engine_app(
        make_app, simulated_call_seconds=1.2, simulated_script=["Yes, speaking.", "Bye!"]
    )
    org = await make_org(app)
    async with client_for(app) as client:
        call_id = await create_call(
            client, org, "+14155550100", first_message="Hi, this is Bright Smiles."
        )
        call = await wait_for_call(client, org, call_id)
        events = await wait_for_event(client, org, call_id, "call.analyzed")

    assert call["status"] == "completed"
    assert call["answered_by"] == "human"
    assert call["first_message"] == "Hi, this is Bright Smiles."
    started, ended = _at(call["started_at"]), _at(call["ended_at"])
    assert _at(call["created_at"]) <= started < ended
    # The simulated person talks for 1.2 s; a loaded machine only makes the call longer.
    lasted = (ended - started).total_seconds()
    assert call["duration"] == int(lasted) >= 1
    lines = [(t["role"], t["text"]) for t in call["transcripts"]]
    assert lines[0] == ("assistant", "Hi, this is Bright Smiles.")
    assert ("user", "Hello?") in lines
    assert ("user", "Yes, speaking.") in lines  # the script answers the agent's line
    assert ("user", "Bye!") not in lines  # the agent said only one line
    assert all(0 <= t["timestamp"] <= lasted for t in call["transcripts"])

    assert [e["sequence"] for e in events] == [1, 2, 3, 4]
    assert [e["type"] for e in events] == [
        "call.dialing",
        "call.in_progress",
        "call.ended",
        "call.analyzed",  # after the call: summary and analyzers (docs/engine-core.md)
    ]
    assert [e["data"]["status"] for e in events] == [
        "dialing",
        "in_progress",
        "completed",
        "completed",
    ]
    assert events[1]["data"]["answered_by"] == "human"
    assert events[2]["data"]["duration"] == call["duration"]
    assert _at(events[0]["at"]) <= _at(events[1]["at"]) <= _at(events[2]["at"])


@pytest.mark.parametrize(
    ("number", "status"),
    [("+14155550001", "busy"), ("+14155550002", "no_answer"), ("+14155550003", "failed")],
)
async def test_unanswered_outcomes_end_with_zero_duration(make_app, number, status):
    app = await engine_app(make_app)
    org = await make_org(app)
    async with client_for(app) as client:
        call_id = await create_call(client, org, number, first_message="Hello there")
        call = await wait_for_call(client, org, call_id)
        events = await events_of(client, org, call_id)
    assert call["status"] == status
    assert call["duration"] == 0
    assert call["started_at"] is None and call["answered_by"] is None
    assert call["ended_at"] is not None
    assert call["transcripts"] == []
    assert [(e["sequence"], e["type"], e["data"]["status"]) for e in events] == [
        (1, "call.dialing", "dialing"),
        (2, "call.ended", status),
    ]
    assert events[1]["data"]["reason"]


async def test_voicemail_is_answered_by_voicemail(make_app):
    app = await engine_app(make_app)
    org = await make_org(app)
    async with client_for(app) as client:
        call_id = await create_call(client, org, "+14155550004", first_message="Please call back.")
        call = await wait_for_call(client, org, call_id)
    assert call["status"] == "completed"
    assert call["answered_by"] == "voicemail"
    assert call["transcripts"][0] == {
        "role": "assistant",
        "text": "Please call back.",
        "timestamp": call["transcripts"][0]["timestamp"],
    }


async def test_agent_speaks_first_false_keeps_the_first_message_unsaid(make_app):
    app = await engine_app(make_app)
    org = await make_org(app)
    async with client_for(app) as client:
        call_id = await create_call(
            client, org, "+14155550100", first_message="Hi", agent_speaks_first=False
        )
        call = await wait_for_call(client, org, call_id)
    assert call["status"] == "completed"
    assert [t["role"] for t in call["transcripts"]] == ["user"]  # only "Hello?"


async def test_max_call_length_ends_the_call(make_app):
    app = await engine_app(make_app, simulated_call_seconds=30, max_call_seconds=0.3)
    org = await make_org(app)
    async with client_for(app) as client:
        call_id = await create_call(client, org, "+14155550100")
        call = await wait_for_call(client, org, call_id, within=5)
        events = await events_of(client, org, call_id)
    assert call["status"] == "completed"
    [ended] = [e for e in events if e["type"] == "call.ended"]
    assert ended["data"]["reason"] == "maximum call length reached"


async def test_calls_wait_enqueued_beyond_the_organizations_limit(make_app):
    app = await engine_app(make_app, max_concurrent_calls=2, simulated_call_seconds=0.4)
    org = await make_org(app)
    other = await make_org(app, "other")
    async with client_for(app) as client:
        ids = [await create_call(client, org, f"+1415555{n:04d}") for n in range(100, 105)]
        theirs = await create_call(client, other, "+14155550199")
        # The other organization's call is not held back by this one's queue.
        await wait_for_call(client, other, theirs, {"in_progress", "completed"})
        for call_id in ids:
            await wait_for_call(client, org, call_id)
        events = {c: await events_of(client, org, c) for c in ids}
    timeline = sorted(
        (e["at"], e["sequence"], +1 if e["type"] == "call.dialing" else -1)
        for evs in events.values()
        for e in evs
        if e["type"] in ("call.dialing", "call.ended")
    )
    active = peak = 0
    for _, _, delta in timeline:
        active += delta
        peak = max(peak, active)
    assert peak == 2, "\n".join(map(str, timeline))
    dialled = sorted(ids, key=lambda c: events[c][0]["at"])
    assert dialled == ids  # in creation order


async def test_cancel_records_an_event_and_stops_the_call(make_app):
    app = await make_app()  # no engine: the call stays enqueued until cancelled
    org = await make_org(app)
    async with client_for(app) as client:
        call_id = await create_call(client, org, "+14155550100")
        assert await events_of(client, org, call_id) == []
        response = await client.post(f"/v1/calls/{call_id}/cancel", headers=org.headers)
        assert response.status_code == 200
        again = await client.post(f"/v1/calls/{call_id}/cancel", headers=org.headers)
        assert again.status_code == 200
        events = await events_of(client, org, call_id)
    assert [(e["sequence"], e["type"], e["data"]) for e in events] == [
        (1, "call.cancelled", {"status": "cancelled"})
    ]


async def test_events_of_another_organizations_call_are_404(make_app):
    app = await make_app()
    org = await make_org(app)
    other = await make_org(app, "other")
    async with client_for(app) as client:
        call_id = await create_call(client, org, "+14155550100")
        theirs = await client.get(f"/v1/calls/{call_id}/events", headers=other.headers)
        missing = await client.get(
            "/v1/calls/5f0c4a9e-1b2d-4c3e-8f4a-0b1c2d3e4f50/events", headers=other.headers
        )
        bad = await client.get("/v1/calls/not-a-uuid/events", headers=org.headers)
    assert assert_status_error(theirs, 404) == assert_status_error(missing, 404)
    assert_status_error(bad, 422)


async def test_worker_off_leaves_calls_enqueued(make_app):
    app = await make_app(worker="off", worker_poll_seconds=0.05)
    org = await make_org(app)
    async with client_for(app) as client:
        call_id = await create_call(client, org, "+14155550100")
        response = await client.get(f"/v1/calls/{call_id}", headers=org.headers)
    assert response.json()["call"]["status"] == "enqueued"
    assert app.state.engine is None
