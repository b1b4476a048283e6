"""Inbound calls (docs/engine-core.md) through the adapter-facing router, and the recording of a
call stored and served through ``recording_presigned_url``."""

from __future__ import annotations

import io
import wave
from urllib.parse import urlsplit

from callplane.telephony.base import InboundOffer
from tests.conftest import client_for
from tests.engine_support import create_call, engine_app, events_of, lifecycle, wait_for_call
from tests.factories import load, make_org

AGENT = "6f1c2a1e-8a43-4c39-9a55-1d2f3e4a5b01"
NUMBER = "3c2b1a09-8f7e-4d6c-b5a4-938271605f01"


async def test_a_call_to_an_organizations_number_is_answered_as_inbound(make_app):
    app = await engine_app(make_app, simulated_call_seconds=0.3)
    org = await make_org(app)
    other = await make_org(app, "other")
    await load(
        app,
        org,
        {
            "agents": [{"id": 7, "uuid": AGENT, "name": "Front desk"}],
            "phone_numbers": [{"id": NUMBER, "number": "+14155550150", "agent_id": 7}],
        },
    )
    adapter = app.state.engine.adapter
    accepted = await adapter.ring(
        InboundOffer(to_number="+14155550150", from_number="+14155557777", call_ref="t1")
    )
    assert accepted is True
    refused = await adapter.ring(InboundOffer(to_number="+14155550999", from_number="+1415"))
    assert refused is False  # the SIP adapter answers 404

    async with client_for(app) as client:
        listed = (await client.get("/v1/calls", headers=org.headers)).json()
        assert listed["total_count"] == 1
        [call] = listed["calls"]
        assert call["direction"] == "inbound"
        assert call["from_number"] == "+14155557777" and call["to_number"] == "+14155550150"
        assert call["agent_id"] == AGENT
        assert call["status"] in ("in_progress", "completed")
        assert call["started_at"] is not None and call["answered_by"] == "human"
        done = await wait_for_call(client, org, call["id"])
        events = lifecycle(await events_of(client, org, call["id"]))
        theirs = (await client.get("/v1/calls", headers=other.headers)).json()
    assert done["status"] == "completed"
    # The number routes to the agent's main branch: the call runs its head (docs/agents.md).
    assert done["agent_branch_name"] == "main" and done["agent_commit_id"]
    assert [(e["sequence"], e["type"]) for e in events] == [
        (1, "call.in_progress"),
        (2, "agent.started"),
        (3, "call.ended"),
    ]
    assert events[1]["data"]["commit_id"] == done["agent_commit_id"]
    assert events[0]["data"]["direction"] == "inbound"
    assert ("user", "Hello?") in [(t["role"], t["text"]) for t in done["transcripts"]]
    assert theirs["total_count"] == 0


async def test_a_number_written_without_plus_reaches_the_e164_number(make_app):
    app = await engine_app(make_app)
    org = await make_org(app)
    await load(app, org, {"phone_numbers": [{"id": NUMBER, "number": "+14155550150"}]})
    assert await app.state.engine.adapter.ring(InboundOffer("14155550150", "+14155557777"))
    async with client_for(app) as client:
        [call] = (await client.get("/v1/calls", headers=org.headers)).json()["calls"]
    assert call["to_number"] == "+14155550150" and call["agent_id"] is None


async def test_the_calls_recording_is_stored_and_served(make_app):
    app = await engine_app(make_app, simulated_call_seconds=0.5)
    org = await make_org(app)
    async with client_for(app) as client:
        call_id = await create_call(client, org, "+14155550100")
        call = await wait_for_call(client, org, call_id)
        url = call["recording_presigned_url"]
        assert url is not None
        audio = await client.get(urlsplit(url).path + "?" + urlsplit(url).query)
    assert audio.status_code == 200
    assert audio.headers["content-type"] == "audio/wav"
    with wave.open(io.BytesIO(audio.content)) as wav:
        assert wav.getnchannels() == 2 and wav.getframerate() == 8000
        assert 0.4 <= wav.getnframes() / 8000 <= 1.5


async def test_unanswered_calls_have_no_recording(make_app):
    app = await engine_app(make_app)
    org = await make_org(app)
    async with client_for(app) as client:
        call_id = await create_call(client, org, "+14155550001")
        call = await wait_for_call(client, org, call_id)
    assert call["status"] == "busy" and call["recording_presigned_url"] is None
