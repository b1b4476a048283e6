"""Calls over HTTP with CALLPLANE_TELEPHONY=sip: the engine places and answers real SIP calls
(SIPp on loopback as the phone), records them, and the API shows and serves the result."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi import FastAPI

from callplane.models.calls import TERMINAL_STATUSES
from callplane.speech.synthesis import EspeakSynthesizer
from tests.conftest import AppFactory, client_for
from tests.factories import OrgHandle, load, make_org
from tests.sipp_peer import (
    answer_scenario,
    free_udp_port,
    pcmu_file,
    render,
    requires_sipp,
    rms,
    start_sipp,
    tone_pcm,
    wav_channels,
)
from tests.speech_audio import noise

pytestmark = requires_sipp

TERMINAL = set(TERMINAL_STATUSES)


async def _sip_app(make_app: AppFactory, **overrides: Any) -> FastAPI:
    settings: dict[str, Any] = {
        "worker": "embedded",
        "telephony": "sip",
        "sip_listen": f"127.0.0.1:{free_udp_port()}",
        "sip_rtp_ports": "20000-60000",
        "ring_timeout_seconds": 5,
        "worker_poll_seconds": 0.05,
    }
    settings.update(overrides)
    app: FastAPI = await make_app(**settings)
    return app


async def _place(client: httpx.AsyncClient, org: OrgHandle, **body: Any) -> str:
    body.setdefault("to_number", "+14155550123")
    response = await client.post("/v1/calls", json=body, headers=org.headers)
    assert response.status_code == 201, response.text
    call_id: str = response.json()["call_id"]
    return call_id


async def _until(
    client: httpx.AsyncClient, org: OrgHandle, call_id: str, statuses: set[str], within: float
) -> tuple[dict[str, Any], list[str]]:
    """Poll the call until its status is one of ``statuses``; also every status seen."""
    seen: list[str] = []
    deadline = time.monotonic() + within
    while True:
        response = await client.get(f"/v1/calls/{call_id}", headers=org.headers)
        assert response.status_code == 200, response.text
        call: dict[str, Any] = response.json()
        call = call.get("call", call)
        if not seen or seen[-1] != call["status"]:
            seen.append(call["status"])
        if call["status"] in statuses:
            return call, seen
        assert time.monotonic() < deadline, f"call stuck in {seen}"
        await asyncio.sleep(0.05)


async def _recording(client: httpx.AsyncClient, call: dict[str, Any]) -> bytes:
    url = call["recording_presigned_url"]
    assert url, "the completed call has no recording URL"
    parts = urlsplit(url)
    response = await client.get(f"{parts.path}?{parts.query}")  # signed: no API key
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("audio/wav")
    return response.content


async def test_outbound_call_is_placed_answered_recorded_and_served(
    make_app: AppFactory, tmp_path: Path
) -> None:
    hello = EspeakSynthesizer().synthesize("Hello?", 8000)
    audio = pcmu_file(hello, tmp_path, "hello.pcmu")
    sipp = await start_sipp(answer_scenario(tmp_path, audio, hangup="far", hold_ms=3000))
    app = await _sip_app(make_app, sip_trunk=f"sip:127.0.0.1:{sipp.port}")
    org = await make_org(app)

    async with client_for(app) as client:
        call_id = await _place(
            client, org, first_message="Hello, this is callplane calling about your order."
        )
        call, seen = await _until(client, org, call_id, TERMINAL, within=20)
        await sipp.finish_ok()
        data = await _recording(client, call)

    assert "in_progress" in seen and call["status"] == "completed", seen
    assert call["answered_by"] == "human"
    assert call["duration"] in (2, 3, 4)  # the far end hung up 3 s after answering
    agent, far_end, rate = wav_channels(data)
    seconds = len(agent) / rate
    assert 2.5 < seconds < 4.5
    assert rms(agent) > 500  # the agent's sentence was spoken, on channel 0
    assert rms(far_end[:rate]) > 300  # the person's "Hello?" on channel 1
    assert rms(far_end[int(1.5 * rate) :]) < 100  # then silence: the channels do not leak


async def test_agent_hangs_up_at_the_maximum_length(make_app: AppFactory, tmp_path: Path) -> None:
    # A short sound, then quiet: a person (a pure tone this long would be a voicemail's beep).
    audio = pcmu_file(noise(0.3, 3000), tmp_path, "sound.pcmu")
    sipp = await start_sipp(answer_scenario(tmp_path, audio, hangup="near"))
    app = await _sip_app(make_app, sip_trunk=f"sip:127.0.0.1:{sipp.port}", max_call_seconds=1.5)
    org = await make_org(app)

    async with client_for(app) as client:
        call_id = await _place(client, org)
        call, _ = await _until(client, org, call_id, TERMINAL, within=15)
        await sipp.finish_ok()  # SIPp received and answered our BYE
        data = await _recording(client, call)

    # 1.5 s from the answer, the listening for who answered (about 1 s here) included.
    assert call["status"] == "completed" and call["answered_by"] == "human"
    assert call["duration"] in (1, 2)
    agent, _, rate = wav_channels(data)
    assert 1.3 < len(agent) / rate < 2.3


@pytest.mark.parametrize(
    ("template", "status_line", "outcome"),
    [
        ("uas_status.xml", "486 Busy Here", "busy"),
        ("uas_status.xml", "503 Service Unavailable", "failed"),
        ("uas_ring.xml", "", "no_answer"),
    ],
    ids=["486", "503", "ring-timeout"],
)
async def test_unanswered_calls_end_with_the_outcome(
    make_app: AppFactory, tmp_path: Path, template: str, status_line: str, outcome: str
) -> None:
    sipp = await start_sipp(render(template, tmp_path, "phone.xml", STATUS_LINE=status_line))
    app = await _sip_app(make_app, sip_trunk=f"sip:127.0.0.1:{sipp.port}", ring_timeout_seconds=1)
    org = await make_org(app)

    async with client_for(app) as client:
        call_id = await _place(client, org)
        call, seen = await _until(client, org, call_id, TERMINAL, within=15)
        await sipp.finish_ok()

    assert call["status"] == outcome and "in_progress" not in seen
    assert call["duration"] == 0 and call["ended_at"] is not None
    assert call["recording_presigned_url"] is None


async def test_a_voicemail_greeting_is_answered_by_voicemail(
    make_app: AppFactory, tmp_path: Path
) -> None:
    greeting = EspeakSynthesizer().synthesize(
        "Hi, you have reached Dana Whitfield. I can't take your call right now, "
        "please leave a message after the tone.",
        8000,
    )
    audio = pcmu_file(greeting, tmp_path, "greeting.pcmu")
    sipp = await start_sipp(answer_scenario(tmp_path, audio, hangup="far", hold_ms=3500))
    app = await _sip_app(make_app, sip_trunk=f"sip:127.0.0.1:{sipp.port}")
    org = await make_org(app)

    async with client_for(app) as client:
        call_id = await _place(client, org, first_message="Hello, this is callplane.")
        call, _ = await _until(client, org, call_id, TERMINAL, within=20)
        await sipp.finish_ok()

    assert call["status"] == "completed" and call["answered_by"] == "voicemail"


async def test_inbound_call_to_a_number_creates_an_inbound_call(
    make_app: AppFactory, tmp_path: Path
) -> None:
    app = await _sip_app(make_app)
    org = await make_org(app)
    await load(app, org, {"phone_numbers": [{"number": "+14155550100"}]})
    listen = app.state.runtime.settings.sip_listen.rsplit(":", 1)
    audio = pcmu_file(tone_pcm(700, 1.0), tmp_path, "caller.pcmu")

    async def call_in(service: str, name: str) -> None:
        scenario = render(
            "uac_call.xml", tmp_path, name, CALLER="+15557654321", AUDIO_FILE=str(audio)
        )
        scenario.write_text(scenario.read_text().replace("HOLD_MS", "1500"))
        sipp = await start_sipp(scenario, remote=(listen[0], int(listen[1])), service=service)
        await sipp.finish_ok()

    await call_in("+14155550100", "known.xml")
    await call_in("+14155559999", "unknown.xml")  # the scenario's 404 branch

    async with client_for(app) as client:
        listed = await client.get("/v1/calls?direction=inbound", headers=org.headers)
        assert listed.status_code == 200
        calls = listed.json()["calls"]
        assert len(calls) == 1  # the unknown number created nothing
        call, _ = await _until(client, org, calls[0]["id"], TERMINAL, within=10)

    assert call["direction"] == "inbound" and call["status"] == "completed"
    assert call["from_number"] == "+15557654321" and call["to_number"] == "+14155550100"
    assert call["duration"] in (1, 2)
    async with client_for(app) as client:
        data = await _recording(client, call)
    _, far_end, rate = wav_channels(data)
    assert rms(far_end[:rate]) > 1000  # the caller's tone
