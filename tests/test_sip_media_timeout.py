"""A far end that vanishes without a BYE (docs/sip-edge.md): no RTP for
CALLPLANE_MEDIA_TIMEOUT_SECONDS ends the call ``completed``, says why, keeps the recording."""

from __future__ import annotations

from pathlib import Path

from callplane.speech.synthesis import EspeakSynthesizer
from tests.conftest import AppFactory, client_for
from tests.engine_support import events_of
from tests.factories import make_org
from tests.sipp_peer import answer_scenario, pcmu_file, requires_sipp, rms, start_sipp, wav_channels
from tests.test_sip_calls import TERMINAL, _place, _recording, _sip_app, _until

pytestmark = requires_sipp


async def test_a_far_end_that_vanishes_is_completed_after_the_media_timeout(
    make_app: AppFactory, tmp_path: Path
) -> None:
    hello = EspeakSynthesizer().synthesize("Hello?", 8000)
    audio = pcmu_file(hello, tmp_path, "hello.pcmu")
    # Answers, says "Hello?", then is gone after 1.5 s: no BYE, no more RTP.
    sipp = await start_sipp(answer_scenario(tmp_path, audio, hangup="vanish", hold_ms=1500))
    app = await _sip_app(
        make_app,
        sip_trunk=f"sip:127.0.0.1:{sipp.port}",
        media_timeout_seconds=2,
        max_call_seconds=120,
    )
    org = await make_org(app)

    async with client_for(app) as client:
        call_id = await _place(client, org, first_message="Hello, this is callplane calling.")
        await sipp.finish_ok()
        call, seen = await _until(client, org, call_id, TERMINAL, within=30)
        events = await events_of(client, org, call_id)
        data = await _recording(client, call)

    assert "in_progress" in seen and call["status"] == "completed", seen
    ended = [e for e in events if e["type"] == "call.ended"]
    assert [e["data"]["reason"] for e in ended] == ["no audio from the far end for 2 s"]
    assert call["duration"] < 60  # not the maximum length
    _, far_end, rate = wav_channels(data)
    assert rms(far_end[:rate]) > 300  # the recording kept what the far end said
