"""The dialer on the embedded engine over the simulated network: attempts are ordinary calls,
retries by outcome, the do-not-call list read at the moment of dialling, completion
(``docs/campaigns.md``). Numbers ending 0001/0002/0004 are busy, unanswered, a voicemail."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import update

from callplane.models.base import utcnow
from callplane.models.campaigns import CampaignRecipient
from tests.campaigns_support import AGENT, create_campaign, open_schedule, org_with_agent
from tests.conftest import AppFactory, client_for
from tests.engine_support import engine_app, events_of
from tests.factories import OrgHandle, runtime_of
from tests.tenancy_check import checked

PERSON, BUSY, VOICEMAIL, LISTED = "+15550001000", "+15550000001", "+15550000004", "+15550003000"


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def _recipients(
    client: httpx.AsyncClient, org: OrgHandle, campaign_id: str
) -> dict[str, dict[str, Any]]:
    response = await client.get(
        f"/v1/campaigns/{campaign_id}/recipients?page_size=100", headers=org.headers
    )
    assert response.status_code == 200, response.text
    return {r["phone_number"]: r for r in response.json()["recipients"]}


async def _until(
    client: httpx.AsyncClient, org: OrgHandle, campaign_id: str, done: Any, within: float = 30
) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        campaign = (await client.get(f"/v1/campaigns/{campaign_id}", headers=org.headers)).json()[
            "campaign"
        ]
        if done(campaign):
            return dict(campaign)
        assert time.monotonic() < deadline, campaign
        await asyncio.sleep(0.1)


async def _due_now(app: FastAPI, org: OrgHandle, number: str) -> None:
    """The retry's delay has passed (the test does not wait the 10 s minimum)."""
    with checked():
        async with runtime_of(app).db.session(write=True) as session:
            await session.execute(
                update(CampaignRecipient)
                .where(
                    CampaignRecipient.organization_id == org.id,
                    CampaignRecipient.phone_number == number,
                )
                .values(next_attempt_at=utcnow() - timedelta(seconds=1))
            )
            await session.commit()


async def test_attempts_are_calls_retried_by_outcome_until_the_campaign_completes(
    make_app: AppFactory,
) -> None:
    app = await engine_app(make_app)
    org = await org_with_agent(app)
    async with client_for(app) as client:
        campaign = await create_campaign(
            client,
            org,
            params={"company": "Bright Smiles", "name": "there"},
            schedule=open_schedule(),
            retry={"max_attempts": 2, "delay_seconds": 10},
        )
        cid = campaign["id"]
        body = {
            "recipients": [
                {"phone_number": PERSON, "params": {"name": "Ann"}},
                {"phone_number": BUSY},
                {"phone_number": VOICEMAIL},
                {"phone_number": LISTED},
            ]
        }
        await client.post(f"/v1/campaigns/{cid}/recipients", json=body, headers=org.headers)
        # Listed after the recipients were added: still never dialled.
        await client.post("/v1/suppressions", json={"phone_number": LISTED}, headers=org.headers)
        started = await client.post(f"/v1/campaigns/{cid}/start", headers=org.headers)
        assert started.status_code == 200, started.text

        await _until(
            client,
            org,
            cid,
            lambda c: (
                c["counts"]["queued"] == 1
                and not c["counts"]["calling"]
                and c["counts"]["completed"] == 1
                and c["counts"]["voicemail"] == 1
            ),
        )
        people = await _recipients(client, org, cid)
        assert people[LISTED]["status"] == "suppressed" and people[LISTED]["call_ids"] == []
        assert people[PERSON]["status"] == "completed"
        assert people[PERSON]["last_outcome"] == "human" and people[PERSON]["attempts"] == 1
        # voicemail is not in retry.on by default: done after one attempt.
        assert people[VOICEMAIL]["status"] == "voicemail"
        assert people[VOICEMAIL]["last_outcome"] == "voicemail"
        busy = people[BUSY]
        assert (busy["status"], busy["attempts"], busy["last_outcome"]) == ("queued", 1, "busy")
        first = (await client.get(f"/v1/calls/{busy['call_ids'][0]}", headers=org.headers)).json()[
            "call"
        ]
        assert first["status"] == "busy" and first["campaign_id"] == cid
        # The delay runs from the end of the attempt.
        waited = _at(busy["next_attempt_at"]) - _at(first["ended_at"] or first["updated_at"])
        assert abs(waited.total_seconds() - 10) < 1.5

        call = (
            await client.get(f"/v1/calls/{people[PERSON]['call_ids'][0]}", headers=org.headers)
        ).json()["call"]
        assert call["campaign_id"] == cid and call["agent_id"] == AGENT
        assert call["params"] == {"company": "Bright Smiles", "name": "Ann"}
        assert call["to_number"] == PERSON and call["status"] == "completed"
        for event in await events_of(client, org, call["id"]):
            assert event["data"]["campaign_id"] == cid, event

        await _due_now(app, org, BUSY)
        done = await _until(client, org, cid, lambda c: c["status"] == "completed")
        assert done["finished_at"] is not None
        assert done["counts"] == {
            "total": 4,
            "queued": 0,
            "calling": 0,
            "completed": 1,
            "voicemail": 1,
            "exhausted": 1,
            "suppressed": 1,
            "opted_out": 0,
            "expired": 0,
            "cancelled": 0,
            "attempts": 4,
        }
        busy = (await _recipients(client, org, cid))[BUSY]
        assert (busy["status"], busy["attempts"], len(busy["call_ids"])) == ("exhausted", 2, 2)
        ordinary = (await client.get("/v1/calls?page_size=100", headers=org.headers)).json()
        assert ordinary["total_count"] == 4  # one call per attempt, nothing else


async def test_pause_stops_new_attempts_and_resume_goes_on(make_app: AppFactory) -> None:
    app = await engine_app(make_app)
    org = await org_with_agent(app)
    async with client_for(app) as client:
        campaign = await create_campaign(
            client,
            org,
            schedule=open_schedule(),
            pacing={"max_concurrent": 1, "calls_per_minute": 6000},
        )
        cid = campaign["id"]
        numbers = [f"+1555000{n:04d}" for n in range(1100, 1106)]
        await client.post(
            f"/v1/campaigns/{cid}/recipients",
            json={"recipients": [{"phone_number": n} for n in numbers]},
            headers=org.headers,
        )
        await client.post(f"/v1/campaigns/{cid}/start", headers=org.headers)
        await _until(client, org, cid, lambda c: c["counts"]["attempts"] >= 1)
        paused = await client.post(f"/v1/campaigns/{cid}/pause", headers=org.headers)
        assert paused.status_code == 200
        settled = await _until(client, org, cid, lambda c: c["counts"]["calling"] == 0)
        await asyncio.sleep(0.5)
        later = (await client.get(f"/v1/campaigns/{cid}", headers=org.headers)).json()["campaign"]
        assert later["counts"]["attempts"] == settled["counts"]["attempts"] < len(numbers)
        assert later["status"] == "paused"
        await client.post(f"/v1/campaigns/{cid}/resume", headers=org.headers)
        done = await _until(client, org, cid, lambda c: c["status"] == "completed")
        assert done["counts"]["completed"] == len(numbers)


async def test_outside_the_calling_hours_nobody_is_dialled(make_app: AppFactory) -> None:
    app = await engine_app(make_app)
    org = await org_with_agent(app)
    schedule = open_schedule()
    schedule["start_at"] = (utcnow() + timedelta(days=2)).isoformat()
    async with client_for(app) as client:
        campaign = await create_campaign(client, org, schedule=schedule)
        cid = campaign["id"]
        await client.post(
            f"/v1/campaigns/{cid}/recipients",
            json={"recipients": [{"phone_number": PERSON}]},
            headers=org.headers,
        )
        await client.post(f"/v1/campaigns/{cid}/start", headers=org.headers)
        deadline = time.monotonic() + 10
        while True:
            person = (await _recipients(client, org, cid))[PERSON]
            if _at(person["next_attempt_at"]) >= _at(schedule["start_at"]):
                break
            assert time.monotonic() < deadline, person
            await asyncio.sleep(0.1)
        assert person["status"] == "queued" and person["attempts"] == 0


async def test_past_end_at_the_waiting_recipients_expire(make_app: AppFactory) -> None:
    app = await engine_app(make_app)
    org = await org_with_agent(app)
    schedule = open_schedule()
    schedule["start_at"] = (utcnow() - timedelta(hours=2)).isoformat()
    schedule["end_at"] = (utcnow() + timedelta(seconds=3)).isoformat()
    async with client_for(app) as client:
        campaign = await create_campaign(
            client, org, schedule=schedule, pacing={"max_concurrent": 1, "calls_per_minute": 1}
        )
        cid = campaign["id"]
        await client.post(
            f"/v1/campaigns/{cid}/recipients",
            json={"recipients": [{"phone_number": f"+1555000{n}"} for n in range(1200, 1204)]},
            headers=org.headers,
        )
        await client.post(f"/v1/campaigns/{cid}/start", headers=org.headers)
        done = await _until(client, org, cid, lambda c: c["status"] == "completed")
        # One call a minute: the first is made, the others wait until end_at passes.
        assert done["counts"]["completed"] == 1 and done["counts"]["expired"] == 3


async def test_a_person_who_says_stop_calling_is_listed_and_opted_out(
    make_app: AppFactory,
) -> None:
    app = await engine_app(
        make_app, simulated_call_seconds=5, simulated_script=["Please stop calling me."]
    )
    org = await org_with_agent(app)
    async with client_for(app) as client:
        agent = await client.post(
            "/v1/agents",
            json={"name": "Renewals", "config": {"first_message": "Hi, this is Bright Smiles."}},
            headers=org.headers,
        )
        assert agent.status_code == 201, agent.text
        campaign = await create_campaign(
            client, org, agent=agent.json()["agent"]["id"], schedule=open_schedule()
        )
        cid = campaign["id"]
        await client.post(
            f"/v1/campaigns/{cid}/recipients",
            json={"recipients": [{"phone_number": PERSON}]},
            headers=org.headers,
        )
        await client.post(f"/v1/campaigns/{cid}/start", headers=org.headers)
        done = await _until(client, org, cid, lambda c: c["status"] == "completed")
        assert done["counts"]["opted_out"] == 1
        person = (await _recipients(client, org, cid))[PERSON]
        assert person["status"] == "opted_out"
        call_id = person["call_ids"][0]
        listed = (
            await client.get(f"/v1/suppressions?phone_number={PERSON}", headers=org.headers)
        ).json()["suppressions"]
        assert [s["reason"] for s in listed] == [f"asked during call {call_id}"]
        call = (await client.get(f"/v1/calls/{call_id}", headers=org.headers)).json()["call"]
        assert call["status"] == "completed"  # the campaign was done only once the call was
        lines = [(t["role"], t["text"]) for t in call["transcripts"] if "text" in t]
        assert ("user", "Please stop calling me.") in lines
        assert lines[-1] == ("assistant", "Understood. We won't call you again. Goodbye.")
        ended = [e for e in await events_of(client, org, call_id) if e["type"] == "call.ended"]
        assert ended[0]["data"]["reason"] == "the person asked not to be called again"
        # Listed now: a plain call to the number is refused too.
        refused = await client.post("/v1/calls", json={"to_number": PERSON}, headers=org.headers)
        assert refused.status_code == 422


async def test_the_inbound_reserve_is_never_used_by_a_campaign(make_app: AppFactory) -> None:
    app = await engine_app(
        make_app, worker_concurrency=3, inbound_reserve=2, simulated_call_seconds=0.5
    )
    org = await org_with_agent(app)
    async with client_for(app) as client:
        campaign = await create_campaign(
            client,
            org,
            schedule=open_schedule(),
            pacing={"max_concurrent": 5, "calls_per_minute": 6000},
        )
        cid = campaign["id"]
        numbers = [f"+1555000{n}" for n in range(1500, 1504)]
        await client.post(
            f"/v1/campaigns/{cid}/recipients",
            json={"recipients": [{"phone_number": n} for n in numbers]},
            headers=org.headers,
        )
        await client.post(f"/v1/campaigns/{cid}/start", headers=org.headers)
        await _until(client, org, cid, lambda c: c["status"] == "completed")
        people = await _recipients(client, org, cid)
        spans = []
        for person in people.values():
            events = await events_of(client, org, person["call_ids"][0])
            at = {e["type"]: _at(e["at"]) for e in events}
            spans.append((at["call.dialing"], at["call.ended"]))
    # One slot of three for the campaign: its calls never overlapped.
    spans.sort()
    assert all(
        earlier[1] <= later[0] for earlier, later in zip(spans[:-1], spans[1:], strict=True)
    ), spans


async def test_the_opt_out_tool_lists_the_number_and_ends_the_call(make_app: AppFactory) -> None:
    from tests.llm_stub import Reply, StubLLM

    with StubLLM(replies=[Reply("Of course. Goodbye.", tool="opt_out")]) as brain:
        app = await engine_app(
            make_app,
            llm_base_url=brain.base_url,
            simulated_call_seconds=5,
            simulated_script=["Please never ring this number again."],
        )
        org = await org_with_agent(app)
        async with client_for(app) as client:
            agent = await client.post(
                "/v1/agents",
                json={"name": "Renewals", "config": {"first_message": "Hi, Bright Smiles here."}},
                headers=org.headers,
            )
            campaign = await create_campaign(
                client, org, agent=agent.json()["agent"]["id"], schedule=open_schedule()
            )
            cid = campaign["id"]
            await client.post(
                f"/v1/campaigns/{cid}/recipients",
                json={"recipients": [{"phone_number": PERSON}]},
                headers=org.headers,
            )
            await client.post(f"/v1/campaigns/{cid}/start", headers=org.headers)
            done = await _until(client, org, cid, lambda c: c["status"] == "completed")
            person = (await _recipients(client, org, cid))[PERSON]
            call_id = person["call_ids"][0]
            listed = (await client.get("/v1/suppressions", headers=org.headers)).json()
            events = await events_of(client, org, call_id)
    assert done["counts"]["opted_out"] == 1 and person["status"] == "opted_out"
    assert [s["reason"] for s in listed["suppressions"]] == [f"asked during call {call_id}"]
    offered = [t["function"]["name"] for t in brain.requests[0]["tools"]]
    assert "opt_out" in offered and "end_call" in offered
    ended = [e for e in events if e["type"] == "call.ended"]
    assert ended[0]["data"]["reason"] == "the person asked not to be called again"
