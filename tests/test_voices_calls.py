"""A call speaks in its voice, and a simulated call's recording holds the speech (docs/voices.md):
the agent's lines in its voice on channel 0, the simulated person's (espeak-ng) on channel 1."""

from __future__ import annotations

import io
import wave
from array import array
from typing import Any

import pytest

from callplane.speech.engines import shared_synthesizers
from callplane.speech.piper import PiperSynthesizer
from tests.conftest import client_for
from tests.engine_support import create_call, engine_app, wait_for_call
from tests.factories import make_org, runtime_of
from tests.sipp_peer import rms

PUBLIC = "http://127.0.0.1:8000"
FIRST = "Hello, this is Acme Dental. How can I help you?"
SCRIPT = ["I'd like to book a cleaning, please."]


def _channels(body: bytes) -> tuple[list[int], list[int]]:
    with wave.open(io.BytesIO(body)) as wav:
        assert wav.getnchannels() == 2 and wav.getframerate() == 8000
        samples = array("h", wav.readframes(wav.getnframes()))
    return list(samples[0::2]), list(samples[1::2])


def _speech_seconds(track: list[int]) -> float:
    """How much of the track is loud (20 ms frames above -40 dBFS)."""
    frames = [track[i : i + 160] for i in range(0, len(track) - 159, 160)]
    return sum(1 for f in frames if rms(f) > 330) * 0.02


@pytest.mark.parametrize("engine", ["piper:en_US-joe-medium", "espeak-ng:en-gb"])
async def test_a_simulated_calls_recording_holds_both_sides_speech(
    make_app: Any, engine: str
) -> None:
    app = await engine_app(make_app, simulated_call_seconds=1.0, simulated_script=SCRIPT)
    settings = runtime_of(app).settings
    voices = shared_synthesizers(settings)
    org = await make_org(app)
    async with client_for(app) as client:
        voice = await client.post(
            "/v1/voices", json={"name": "Agent", "engine": engine}, headers=org.headers
        )
        assert voice.status_code == 201, voice.text
        spoken = _piper_lines(voices.get(engine))
        call_id = await create_call(
            client,
            org,
            "+14155550100",
            voice_id=voice.json()["id"],
            first_message=FIRST,
            agent_speaks_first=True,
        )
        call = await wait_for_call(client, org, call_id, within=30)
        assert call["status"] == "completed"
        url = call["recording_presigned_url"]
        assert url, call
        audio = await client.get(url.removeprefix(PUBLIC))
        assert audio.status_code == 200

    agent, person = _channels(audio.content)
    # The opening line (~3 s spoken) and "Hello?" plus the script's line (~3 s).
    assert _speech_seconds(agent) > 1.5, "the agent's channel is silent"
    assert _speech_seconds(person) > 1.5, "the person's channel is silent"
    if engine.startswith("piper:"):
        # The agent's line was Piper's (the process the worker shares), not espeak-ng's.
        assert _piper_lines(voices.get(engine)) > spoken


def _piper_lines(synthesizer: object) -> int:
    return synthesizer.lines if isinstance(synthesizer, PiperSynthesizer) else 0
