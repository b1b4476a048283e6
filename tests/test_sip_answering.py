"""Answering machines heard over real SIP (SIPp on loopback plays the far end): a recorded
greeting with a beep is ``voicemail`` and the agent's message is recorded after the beep; a
person's "Hello?" is ``human`` and hears the agent within 3 s of the answer. Audio is made at
test time (espeak-ng, a synthetic tone); times come from the call's own transcript and
recording, never from the test's clock."""

from __future__ import annotations

from pathlib import Path

from tests.agents_support import create_agent
from tests.conftest import AppFactory, client_for
from tests.factories import make_org
from tests.sipp_peer import (
    answer_scenario,
    pcmu_file,
    requires_sipp,
    rms,
    start_sipp,
    tone_pcm,
    tone_power,
    wav_channels,
)
from tests.speech_audio import silence, spoken
from tests.test_sip_calls import TERMINAL, _place, _recording, _sip_app, _until

pytestmark = requires_sipp

DISCLOSURE = "This call is recorded."
GREETING = (
    "Hi, you've reached Sam. I can't take your call right now, "
    "please leave a message after the tone."
)
FRAME = 160  # 20 ms at 8 kHz


def _frames(samples: list[int]) -> list[list[int]]:
    return [samples[i : i + FRAME] for i in range(0, len(samples) - FRAME + 1, FRAME)]


def _beep_end_seconds(far_end: list[int], frequency: float = 1000) -> float:
    """Where the far end's beep stops in the recording: the end of the last frame that is
    almost all ``frequency`` (Goertzel power against the frame's whole energy)."""
    last = None
    for n, frame in enumerate(_frames(far_end)):
        level = rms(frame)
        if level > 1000 and tone_power(frame, frequency) > 0.6 * level**2 * FRAME**2 / 2:
            last = n
    assert last is not None, "the beep is not on the recording"
    return (last + 1) * FRAME / 8000


def _onset_seconds(agent: list[int]) -> float:
    """Where the agent's first words start in the recording."""
    onset = next((n for n, frame in enumerate(_frames(agent)) if rms(frame) > 300), None)
    assert onset is not None, "the agent said nothing"
    return onset * FRAME / 8000


async def test_a_greeting_with_a_beep_is_a_voicemail_and_the_message_follows_the_beep(
    make_app: AppFactory, tmp_path: Path
) -> None:
    beep = tone_pcm(1000, 0.4)
    audio = pcmu_file(
        spoken(GREETING) + silence(0.3) + beep + silence(0.5), tmp_path, "voicemail.pcmu"
    )
    sipp = await start_sipp(answer_scenario(tmp_path, audio, hangup="near"), timeout_seconds=40)
    app = await _sip_app(make_app, sip_trunk=f"sip:127.0.0.1:{sipp.port}")
    org = await make_org(app)

    async with client_for(app) as client:
        agent = await create_agent(
            client,
            org,
            {
                "disclosure": DISCLOSURE,
                "first_message": "Hi, this is Acme.",
                "voicemail": {"action": "leave_message", "message": "Please call Acme back."},
            },
        )
        call_id = await _place(client, org, agent_id=agent["id"])
        call, _ = await _until(client, org, call_id, TERMINAL, within=40)
        await sipp.finish_ok(within=40)  # the agent hung up once its message was said
        data = await _recording(client, call)
        events = await client.get(f"/v1/calls/{call_id}/events", headers=org.headers)

    assert call["status"] == "completed" and call["answered_by"] == "voicemail"
    answered = [e for e in events.json()["events"] if e["type"] == "call.in_progress"]
    assert [e["data"]["answered_by"] for e in answered] == ["voicemail"]
    said = [e for e in call["transcripts"] if e["role"] == "assistant"]
    assert [e["text"] for e in said] == [DISCLOSURE, "Please call Acme back."]
    agent_channel, far_end, rate = wav_channels(data)
    beep_ends = _beep_end_seconds(far_end)
    # The greeting and the beep were heard whole: nothing of the agent before the beep
    # stopped (one frame's slack for where the beep ends inside a frame).
    assert _onset_seconds(agent_channel) >= beep_ends - 0.02
    assert said[0]["timestamp"] >= beep_ends - 0.02
    # The message is placed where it began to be heard: after the disclosure had been.
    assert said[1]["timestamp"] > said[0]["timestamp"] + 0.5
    # ...and the message is on the recording, after the disclosure.
    assert rms(agent_channel[int(beep_ends * rate) :]) > 300


async def test_a_person_saying_hello_is_human_and_hears_the_agent_within_3_seconds(
    make_app: AppFactory, tmp_path: Path
) -> None:
    audio = pcmu_file(silence(0.3) + spoken("Hello?") + silence(0.5), tmp_path, "hello.pcmu")
    sipp = await start_sipp(answer_scenario(tmp_path, audio, hangup="far", hold_ms=5000))
    app = await _sip_app(make_app, sip_trunk=f"sip:127.0.0.1:{sipp.port}")
    org = await make_org(app)

    async with client_for(app) as client:
        agent = await create_agent(
            client,
            org,
            {
                "disclosure": DISCLOSURE,
                "first_message": "Hi, this is Acme.",
                "voicemail": {"action": "leave_message", "message": "Please call Acme back."},
            },
        )
        call_id = await _place(client, org, agent_id=agent["id"])
        call, _ = await _until(client, org, call_id, TERMINAL, within=30)
        await sipp.finish_ok(within=30)
        data = await _recording(client, call)

    assert call["status"] == "completed" and call["answered_by"] == "human"
    said = [e for e in call["transcripts"] if e["role"] == "assistant"]
    assert [e["text"] for e in said][:2] == [DISCLOSURE, "Hi, this is Acme."]
    # Timestamps count from the answer: the person waited less than 3 s for the agent.
    assert said[0]["timestamp"] < 3.0
    agent_channel, _, _ = wav_channels(data)
    assert _onset_seconds(agent_channel) < 3.0
