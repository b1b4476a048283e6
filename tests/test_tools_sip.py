"""Cold transfer over SIP against SIPp (docs/tools.md#transfers): the agent's REFER carries the
screen-pop header; a far end that takes it (202, NOTIFY 200) gets the call handed over and the
agent leg hung up; one that answers 405 leaves the agent to tell the caller and go on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.conftest import AppFactory, client_for
from tests.engine_support import agent_engine, events_of
from tests.factories import make_org
from tests.llm_stub import Reply, StubLLM
from tests.sipp_peer import SCENARIOS, pcmu_file, render, requires_sipp, start_sipp
from tests.test_sip_calls import TERMINAL, _place, _sip_app, _until

pytestmark = requires_sipp

CONFIG = {
    "tools": [
        {
            "type": "transfer_call",
            "destinations": [
                {"name": "desk", "number": "+14155550100", "handoff_provider": "genesys"}
            ],
        }
    ]
}


@asynccontextmanager
async def transfer_call(
    make_app: AppFactory, tmp_path: Path, far_end: str, brain: StubLLM
) -> AsyncIterator[tuple[dict[str, Any], list[Any]]]:
    block = (SCENARIOS / f"transfer_{far_end}.xml").read_text()
    audio = pcmu_file(bytes(8000 * 2), tmp_path, "silence.pcmu")
    scenario = render(
        "uas_answer.xml",
        tmp_path,
        "transfer.xml",
        CHALLENGE_BLOCK="",
        AUTH_ACTION="",
        AUTH_CHECK="",
        HANGUP_BLOCK=block,
        AUDIO_FILE=str(audio),
    )
    sipp = await start_sipp(scenario, timeout_seconds=30)
    app = await _sip_app(
        make_app,
        worker="off",
        sip_trunk=f"sip:127.0.0.1:{sipp.port}",
        llm_base_url=brain.base_url,
        llm_timeout_seconds=5,
        max_call_seconds=20,
    )

    try:
        async with agent_engine(app, CONFIG, agent_name="Ada"):
            org = await make_org(app)
            async with client_for(app) as client:
                call_id = await _place(client, org)
                call, _ = await _until(client, org, call_id, TERMINAL, within=30)
                await sipp.finish_ok()
                yield call, await events_of(client, org, call_id)
    finally:
        await sipp.stop()


async def test_a_cold_transfer_is_a_refer_with_the_screen_pop_and_hands_the_call_over(
    make_app: AppFactory, tmp_path: Path
) -> None:
    with StubLLM(opening=Reply("", "transfer_call", {"destination": "desk"})) as brain:
        async with transfer_call(make_app, tmp_path, "accept", brain) as (call, events):
            pass
    assert call["status"] == "completed" and call["transferred"] is True
    assert call["screen_pop_token"]
    assert call["handoff_metadata"]["genesys"]["campaign_name"] == "Ada"
    types = [e["type"] for e in events]
    assert "call.transferred" in types
    assert events[types.index("call.ended")]["data"]["reason"] == "the call was transferred"


async def test_a_refer_answered_405_is_told_to_the_caller_and_the_call_goes_on(
    make_app: AppFactory, tmp_path: Path
) -> None:
    brain = StubLLM(
        opening=Reply("", "transfer_call", {"destination": "desk"}),
        after_tool=[Reply("Sorry, I cannot transfer you right now. Goodbye.", "end_call")],
    )
    with brain:
        async with transfer_call(make_app, tmp_path, "refuse", brain) as (call, events):
            pass
    assert call["status"] == "completed" and call["transferred"] is False
    answers = [e["text"] for e in call["transcripts"] if e["role"] == "tool"]
    assert "did not go through: refused (405 Method Not Allowed)" in answers[0]
    lines = [e["text"] for e in call["transcripts"] if e["role"] == "assistant" and e["text"]]
    assert lines == ["Sorry, I cannot transfer you right now. Goodbye."]
    types = [e["type"] for e in events]
    assert "call.transferred" not in types
    assert events[types.index("call.ended")]["data"]["reason"] == "the agent hung up"


class _RtpSink(asyncio.DatagramProtocol):
    """Where the far end's SDP points our RTP: keeps the RFC 4733 events it receives."""

    def __init__(self) -> None:
        self.events: list[tuple[int, int, bool]] = []  # (timestamp, event, end)

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        if len(data) >= 16 and data[1] & 0x7F == DTMF_PAYLOAD_TYPE:
            timestamp = int.from_bytes(data[4:8], "big")
            self.events.append((timestamp, data[12], bool(data[13] & 0x80)))

    def digits(self) -> str:
        ended = dict.fromkeys((ts, event) for ts, event, end in self.events if end)
        return "".join(DTMF_KEYS[event] for _, event in ended)


DTMF_PAYLOAD_TYPE = 101
DTMF_KEYS = "0123456789*#ABCD"


PCMU_ONLY = "RTP/AVP 0\n      a=rtpmap:0 PCMU/8000"
WITH_KEYS = (
    "RTP/AVP 0 101\n      a=rtpmap:0 PCMU/8000\n      a=rtpmap:101 telephone-event/8000\n"
    "      a=fmtp:101 0-16"
)


async def _press_keys(make_app: AppFactory, tmp_path: Path, sdp: str) -> tuple[Any, _RtpSink]:
    """A call whose agent presses 12#9, to a phone answering with ``sdp``'s audio line; the
    call, and what reached the phone's RTP address."""
    loop = asyncio.get_running_loop()
    transport, sink = await loop.create_datagram_endpoint(_RtpSink, local_addr=("127.0.0.1", 0))
    port = transport.get_extra_info("sockname")[1]
    scenario = render(
        "uas_answer.xml",
        tmp_path,
        "dtmf.xml",
        CHALLENGE_BLOCK="",
        AUTH_ACTION="",
        AUTH_CHECK="",
        HANGUP_BLOCK=(SCENARIOS / "hangup_near.xml").read_text(),
        # No audio from the phone (our RTP would follow its source port): its SDP sends ours
        # to the sink.
        **{'<exec rtp_stream="AUDIO_FILE,1,0" />': '<log message="no audio" />'},
        **{PCMU_ONLY: sdp, "[media_port]": str(port)},
    )
    sipp = await start_sipp(scenario, timeout_seconds=30)
    brain = StubLLM(
        opening=Reply("", "send_dtmf", {"digits": "12#9"}),
        after_tool=[Reply("", "end_call")],
    )
    config = {"tools": [{"type": "send_dtmf"}]}
    try:
        with brain:
            app = await _sip_app(
                make_app,
                worker="off",
                sip_trunk=f"sip:127.0.0.1:{sipp.port}",
                llm_base_url=brain.base_url,
                llm_timeout_seconds=5,
                max_call_seconds=20,
            )

            async with agent_engine(app, config):
                org = await make_org(app)
                async with client_for(app) as client:
                    call_id = await _place(client, org)
                    call, _ = await _until(client, org, call_id, TERMINAL, within=30)
                    await sipp.finish_ok()
    finally:
        transport.close()
        await sipp.stop()
    return call, sink


async def test_send_dtmf_presses_keys_as_rfc_4733_telephone_events(
    make_app: AppFactory, tmp_path: Path
) -> None:
    call, sink = await _press_keys(make_app, tmp_path, WITH_KEYS)
    answers = [e["text"] for e in call["transcripts"] if e["role"] == "tool"]
    assert answers[0] == '{"sent":"12#9"}'
    assert sink.digits() == "12#9"
    assert len({ts for ts, _, _ in sink.events}) == 4  # one event per key


async def test_a_phone_that_names_no_telephone_events_gets_no_keypresses(
    make_app: AppFactory, tmp_path: Path
) -> None:
    call, sink = await _press_keys(make_app, tmp_path, PCMU_ONLY)
    answers = [e["text"] for e in call["transcripts"] if e["role"] == "tool"]
    assert "does not take keypresses" in answers[0]
    assert call["status"] == "completed"
    assert sink.events == []
