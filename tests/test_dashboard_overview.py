"""The overview (issue 29): the dashboard's first page, charts computed from the organization's
own calls, turn latency events and webhook attempts, and outcomes compared per agent commit.
Another organization's calls never count."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from callplane.models.base import utcnow
from callplane.models.calls import CallEvent
from tests.agents_support import commit, create_agent
from tests.conftest import client_for
from tests.dashboard_support import browser_client, make_person, sign_in
from tests.factories import load, make_org, runtime_of


def _call(n: int, status: str, commit: str, booked: bool, days_ago: int) -> dict[str, Any]:
    created = utcnow() - timedelta(days=days_ago, minutes=n)
    answered = status == "completed"
    call: dict[str, Any] = {
        "to_number": f"+1415555{n:04d}",
        "status": status,
        "direction": "outbound",
        "created_at": created.isoformat(),
        "agent_commit_id": commit,
        "transferred": n % 5 == 0,
    }
    if answered:
        call |= {
            "started_at": (created + timedelta(seconds=5)).isoformat(),
            "ended_at": (created + timedelta(seconds=65)).isoformat(),
            "duration": 60 if commit == "c0ffee1" else 90,
            "analysis_results": [{"prompt": "Booked?", "result": {"booked": booked}}],
        }
    return call


async def _seed(app: Any, org: Any) -> list[str]:
    calls = [
        _call(n, "completed" if n % 4 else "no_answer", "c0ffee1", n % 2 == 0, n % 3)
        for n in range(100, 112)
    ] + [_call(n, "completed", "beef002", True, 1) for n in range(200, 204)]
    created = await load(app, org, {"calls": calls})
    ids: list[str] = [str(i) for i in created["calls"]]
    async with runtime_of(app).db.session(write=True) as session:
        for sequence, total in enumerate([400, 600, 800, 1000, 2600], start=50):
            session.add(
                CallEvent(
                    organization_id=org.id,
                    call_uuid=uuid.UUID(ids[1]),
                    sequence=sequence,
                    type="agent.turn_latency",
                    at=utcnow(),
                    data={
                        "end_of_turn_ms": 100,
                        "recognition_ms": 100,
                        "first_token_ms": total - 300,
                        "first_audio_ms": 100,
                        "total_ms": total,
                    },
                )
            )
        await session.commit()
    return ids


async def _tool_events(app: Any, org: Any, call: str, outcomes: list[str]) -> None:
    """What the turn loop writes for each tool use (``tools/toolbox.py``)."""
    async with runtime_of(app).db.session(write=True) as session:
        for sequence, outcome in enumerate(outcomes, start=80):
            session.add(
                CallEvent(
                    organization_id=org.id,
                    call_uuid=uuid.UUID(call),
                    sequence=sequence,
                    type="tool.called",
                    at=utcnow(),
                    data={"name": "lookup", "duration_seconds": 0.2, "outcome": outcome},
                )
            )
        await session.commit()


async def test_the_overview_is_the_first_page_and_counts_only_its_organization(app: Any) -> None:
    org, other = await make_org(app, "Ours"), await make_org(app, "Theirs")
    await _seed(app, org)
    await load(app, other, {"calls": [_call(n, "failed", "other99", False, 0) for n in range(20)]})
    person = await make_person(app, org)
    async with browser_client(app) as client:
        assert (await sign_in(client, person.email, person.password)).status_code == 303
        home = await client.get("/dashboard/")
        assert home.status_code == 303 and home.headers["location"] == "/dashboard/overview"
        page = await client.get("/dashboard/overview")
    assert page.status_code == 200
    text = page.text
    assert text.count('<svg class="chart"') == 4
    assert '<dd id="total-calls">16</dd>' in text
    # 13 answered of 16 dialled (3 no_answer); the completed ones average (9 x 60 + 4 x 90) / 13.
    assert '<dd id="answer-rate">81 %</dd>' in text
    assert '<dd id="average-duration">69 s</dd>' in text
    assert "800 ms / 2600 ms (goal 1000 ms)" in text
    assert "no tool calls yet" in text and "no webhook attempts" in text
    # Commit against commit: the newest first, with the analyzers' answers side by side.
    assert text.index("c0ffee1") < text.index("beef002")  # c0ffee1 was used today
    assert "booked: yes" in text
    assert "other99" not in text and "failed</text>" not in text


async def test_the_overview_of_an_organization_without_calls(app: Any) -> None:
    org = await make_org(app)
    person = await make_person(app, org)
    async with browser_client(app) as client:
        await sign_in(client, person.email, person.password)
        page = await client.get("/dashboard/overview")
    assert page.status_code == 200
    assert "No calls in this period." in page.text and "no turns yet" in page.text


async def test_the_overview_counts_the_tool_calls_the_engine_records(app: Any) -> None:
    org, other = await make_org(app, "Ours"), await make_org(app, "Theirs")
    ids = await _seed(app, org)
    await _tool_events(app, org, ids[2], ["ok", "error", "ok"])
    [theirs] = (await load(app, other, {"calls": [_call(1, "completed", "x", True, 0)]}))["calls"]
    await _tool_events(app, other, str(theirs), ["timeout"] * 4)
    person = await make_person(app, org)
    async with browser_client(app) as client:
        await sign_in(client, person.email, person.password)
        page = await client.get("/dashboard/overview")
    assert page.status_code == 200
    assert "1 of 3 failed" in page.text and "no tool calls yet" not in page.text


async def test_outcomes_per_commit_name_the_agent_and_the_commit_message(app: Any) -> None:
    org = await make_org(app)
    async with client_for(app) as client:
        agent = await create_agent(client, org, {"first_message": "Hi."})
        made = await commit(
            client, org, agent["id"], message="Shorter greeting", changes={"first_message": "Yo."}
        )
    commit_id = made["commit"]["id"]
    await load(app, org, {"calls": [_call(1, "completed", commit_id, True, 0)]})
    person = await make_person(app, org)
    async with browser_client(app) as client:
        await sign_in(client, person.email, person.password)
        page = (await client.get("/dashboard/overview")).text
    agent_page = f"/dashboard/agents/{agent['id']}"
    assert f'<a href="{agent_page}">Riley</a> · <a href="{agent_page}#commit-{commit_id}">' in page
    assert ">Shorter greeting</a>" in page
    assert f'title="{commit_id}">{commit_id[:8]}</small>' in page
