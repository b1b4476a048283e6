"""Warm transfer over SIP against SIPp (docs/tools.md#transfers): the agent calls out (SIPp as the
caller's phone), the brain asks for ``transfer_call`` to a warm destination (a second SIPp as
the person's phone, its media a small RTP peer here that hears the summary and then speaks),
the person is briefed, then bridged to the caller until either hangs up. A destination that is
busy is told to the brain and the conversation goes on. And the REFER of a cold transfer
follows the dialog's route set (the SIP edge), as our BYE does."""

from __future__ import annotations

import asyncio
import math
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import httpx
from aiortp.codecs import get_codec

from callplane.engine.worker import Engine
from callplane.speech.synthesis import EspeakSynthesizer
from callplane.telephony.base import (
    Connection,
    ConversationRunner,
    InboundOffer,
    TransferOutcome,
    TransferTarget,
)
from callplane.telephony.sip import SipAdapter
from callplane.tools.transfer import HANDOFF_INSTRUCTIONS
from tests.conftest import AppFactory, client_for
from tests.engine_support import agent_engine, events_of
from tests.factories import OrgHandle, make_org
from tests.llm_stub import Reply, StubLLM
from tests.sipp_peer import (
    SCENARIOS,
    Sipp,
    pcmu_file,
    render,
    requires_sipp,
    start_sipp,
    wav_channels,
)
from tests.test_conversation_sip import _voiced_spans
from tests.test_sip_calls import TERMINAL, _place, _recording, _sip_app, _until
from tests.test_sip_edge_adapter import Peer, ack_for, header, headers, invite

pytestmark = requires_sipp

RATE = 8000
PCMU = get_codec(0)
FRAME = 160  # PCMU bytes (and samples) in 20 ms
PERSON_SAYS = "Hello, this is Maria at the billing desk. How can I help you today?"
MESSAGE = "Putting you through to the billing desk now."
PERSON = "warm_person.xml"
SUMMARY = "Sam is calling about a double charge on his card. He wants a refund today."


class _PersonMedia(asyncio.DatagramProtocol):
    """The person's phone's audio (the destination's SDP points here): counts the loud frames
    of the summary it hears and, once the summary is over, speaks ``speech`` in a loop from
    the same socket (so symmetric RTP keeps our side on it)."""

    def __init__(self, speech: bytes) -> None:
        self._speech = PCMU.encode(speech + bytes(RATE * 2))  # a second of silence between
        self.loud_frames = 0
        self._quiet_after = 0
        self.summary_heard = asyncio.Event()
        self._remote: tuple[str, int] | None = None
        self._transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        if len(data) <= 12 or data[1] & 0x7F != 0:
            return
        self._remote = addr
        pcm = PCMU.decode(data[12 + 4 * (data[0] & 0x0F) :])
        samples = struct.unpack(f"<{len(pcm) // 2}h", pcm)
        level = math.sqrt(sum(s * s for s in samples) / len(samples)) if samples else 0.0
        if level > 300:
            self.loud_frames += 1
            self._quiet_after = 0
        elif self.loud_frames >= 25:  # half a second of speech heard, now a pause of 1 s
            self._quiet_after += 1
            if self._quiet_after >= 50:
                self.summary_heard.set()

    async def speak(self) -> None:
        await self.summary_heard.wait()
        sequence = 0
        while True:
            for offset in range(0, len(self._speech), FRAME):
                header_ = struct.pack("!BBHII", 0x80, 0, sequence & 0xFFFF, sequence * FRAME, 7)
                if self._transport is not None and self._remote is not None:
                    self._transport.sendto(
                        header_ + self._speech[offset : offset + FRAME], self._remote
                    )
                sequence += 1
                await asyncio.sleep(FRAME / RATE)


@dataclass
class WarmCall:
    client: httpx.AsyncClient
    org: OrgHandle
    call_id: str
    engine: Engine
    caller: Sipp
    person: Sipp
    media: _PersonMedia

    async def ended(self) -> dict[str, Any]:
        call, _ = await _until(self.client, self.org, self.call_id, TERMINAL, within=90)
        await self.caller.finish_ok(within=30)
        await self.person.finish_ok(within=30)
        return call


def _destination(person: Sipp, message: str | None) -> dict[str, Any]:
    destination = {
        "name": "billing",
        "sip": f"sip:billing@127.0.0.1:{person.port}",
        "mode": "warm",
        "handoff_provider": "genesys",
    }
    return {**destination, "message": message} if message else destination


@asynccontextmanager
async def warm_call(
    make_app: AppFactory,
    tmp_path: Path,
    brain: StubLLM,
    person: str,
    message: str | None = MESSAGE,
    max_call_seconds: int = 80,
    **person_values: str,
) -> AsyncIterator[WarmCall]:
    """An outbound call to the caller's SIPp (it waits for our BYE, sending silence all along)
    whose agent transfers to a SIPp playing the scenario ``person`` (filled with
    ``person_values``)."""
    loop = asyncio.get_running_loop()
    speech = EspeakSynthesizer().synthesize(PERSON_SAYS, RATE)
    transport, media = await loop.create_datagram_endpoint(
        lambda: _PersonMedia(speech), local_addr=("127.0.0.1", 0)
    )
    media_port = transport.get_extra_info("sockname")[1]
    speaking = asyncio.create_task(media.speak())
    caller_scenario = render(
        "uas_answer.xml",
        tmp_path,
        "caller.xml",
        CHALLENGE_BLOCK="",
        AUTH_ACTION="",
        AUTH_CHECK="",
        HANGUP_BLOCK=(SCENARIOS / "hangup_near.xml").read_text(),
        AUDIO_FILE=str(pcmu_file(bytes(RATE * 2), tmp_path, "silence.pcmu")),
        # Silence all along: the caller's line stays alive (no media timeout) and says nothing.
        **{",1,0": ",-1,0"},
    )
    person_scenario = render(
        person, tmp_path, "person.xml", MEDIA_PORT=str(media_port), **person_values
    )
    caller = await start_sipp(caller_scenario, timeout_seconds=90)
    destination = await start_sipp(person_scenario, timeout_seconds=90)
    config = {
        "tools": [{"type": "transfer_call", "destinations": [_destination(destination, message)]}]
    }
    app = await _sip_app(
        make_app,
        worker="off",
        sip_trunk=f"sip:127.0.0.1:{caller.port}",
        llm_base_url=brain.base_url,
        llm_timeout_seconds=5,
        max_call_seconds=max_call_seconds,
    )

    try:
        async with agent_engine(app, config, agent_name="Ada") as engine:
            org = await make_org(app)
            async with client_for(app) as client:
                call_id = await _place(client, org)
                yield WarmCall(client, org, call_id, engine, caller, destination, media)
        # Its socket closes once the last BYEs are answered: not left to the garbage collector.
        assert isinstance(engine.adapter, SipAdapter)
        await asyncio.wait_for(engine.adapter.wait_closed(), 30)
    finally:
        speaking.cancel()
        transport.close()
        await caller.stop()
        await destination.stop()


def _hangup(who: str, hold_ms: int = 0) -> str:
    return (SCENARIOS / f"hangup_{who}.xml").read_text().replace("HOLD_MS", str(hold_ms))


def _transfer_brain() -> StubLLM:
    return StubLLM(opening=Reply("", "transfer_call", {"destination": "billing"}), summary=SUMMARY)


def _tool_answers(call: dict[str, Any]) -> list[tuple[float, str]]:
    return [
        (e["timestamp"], e["text"])
        for e in call["transcripts"]
        if e["role"] == "tool" and e["function_name"] == "transfer_call"
    ]


async def test_a_warm_transfer_briefs_the_person_then_bridges_them_to_the_caller(
    make_app: AppFactory, tmp_path: Path
) -> None:
    # The person talks for a while after the summary, then hangs up.
    with _transfer_brain() as brain:
        person = _hangup("far", hold_ms=15000)
        async with warm_call(make_app, tmp_path, brain, PERSON, HANGUP_BLOCK=person) as warm:
            call = await warm.ended()
            events = await events_of(warm.client, warm.org, warm.call_id)
            audio = await _recording(warm.client, call)
        summary_requests = [
            r
            for r in brain.requests
            if any(m.get("content") == HANDOFF_INSTRUCTIONS for m in r["messages"])
        ]
    assert call["status"] == "completed" and call["transferred"] is True
    assert call["screen_pop_token"]
    handoff = call["handoff_metadata"]["genesys"]
    assert handoff["campaign_name"] == "Ada" and handoff["conversation_id"]
    [(transferred_at, answer)] = _tool_answers(call)
    assert answer == '{"transferred":true,"destination":"billing"}'
    lines = [e["text"] for e in call["transcripts"] if e["role"] == "assistant" and e["text"]]
    assert lines == [MESSAGE]  # the agent said nothing more once the person had the line
    types = [e["type"] for e in events]
    assert types.index("call.transferred") < types.index("call.ended")
    assert events[types.index("call.ended")]["data"]["reason"] == "the call was transferred"
    # The person was told the brain's summary, on their own line, before being put through.
    assert len(summary_requests) == 1 and warm.media.summary_heard.is_set()
    # The caller's recording holds the person's voice (the agent's channel: what the caller
    # heard) after the transfer; the caller's leg was up until the person hung up.
    agent_channel, _, rate = wav_channels(audio)
    assert rate == RATE
    after = [span for span in _voiced_spans(agent_channel) if span[0] > transferred_at + 0.2]
    assert after and sum(end - start for start, end in after) > 1.0, _voiced_spans(agent_channel)


async def test_a_busy_warm_destination_is_told_to_the_brain_and_the_call_goes_on(
    make_app: AppFactory, tmp_path: Path
) -> None:
    brain = StubLLM(
        opening=Reply("", "transfer_call", {"destination": "billing"}),
        after_tool=[Reply("Sorry, billing is busy right now. Goodbye.", "end_call")],
    )
    with brain:
        # No message: the stub brain answers a tool's result only when it is the last word.
        busy = {"STATUS_LINE": "486 Busy Here"}
        async with warm_call(
            make_app, tmp_path, brain, "uas_status.xml", message=None, **busy
        ) as warm:
            call = await warm.ended()
            events = await events_of(warm.client, warm.org, warm.call_id)
    assert call["status"] == "completed" and call["transferred"] is False
    [(_, answer)] = _tool_answers(call)
    assert "did not go through: the line is busy (486 Busy Here)" in answer
    lines = [e["text"] for e in call["transcripts"] if e["role"] == "assistant" and e["text"]]
    assert lines == ["Sorry, billing is busy right now. Goodbye."]
    types = [e["type"] for e in events]
    assert "call.transferred" not in types
    assert events[types.index("call.ended")]["data"]["reason"] == "the agent hung up"


async def test_a_worker_stopping_during_the_bridge_hangs_up_both_legs_and_completes_the_call(
    make_app: AppFactory, tmp_path: Path
) -> None:
    # Nobody hangs up: the person and the caller both wait for our BYE.
    with _transfer_brain() as brain:
        person = _hangup("near")
        async with warm_call(make_app, tmp_path, brain, PERSON, HANGUP_BLOCK=person) as warm:
            await _until_transferred(warm)
            await warm.engine.stop(grace=0)
            call = await warm.ended()  # both SIPps got their BYE
            events = await events_of(warm.client, warm.org, warm.call_id)
    assert call["status"] == "completed" and call["transferred"] is True
    types = [e["type"] for e in events]
    assert events[types.index("call.ended")]["data"]["reason"] == "the worker stopped"


async def test_the_maximum_call_length_ends_a_bridged_call_and_both_legs(
    make_app: AppFactory, tmp_path: Path
) -> None:
    # Nobody hangs up; the call's 30 s are well past the few seconds the transfer takes.
    with _transfer_brain() as brain:
        person = _hangup("near")
        async with warm_call(
            make_app, tmp_path, brain, PERSON, max_call_seconds=30, HANGUP_BLOCK=person
        ) as warm:
            call = await warm.ended()  # both SIPps got their BYE
            events = await events_of(warm.client, warm.org, warm.call_id)
    assert call["status"] == "completed" and call["transferred"] is True
    types = [e["type"] for e in events]
    assert events[types.index("call.ended")]["data"]["reason"] == "maximum call length reached"


async def _until_transferred(warm: WarmCall) -> None:
    for _ in range(600):
        response = await warm.client.get(f"/v1/calls/{warm.call_id}", headers=warm.org.headers)
        if response.json()["call"]["transferred"]:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the call was never transferred")


async def test_a_refer_follows_the_route_set_of_a_call_that_came_through_the_edge() -> None:
    """REFER is in-dialog, as BYE is: to the first Route (the proxy), not the INVITE's source."""
    adapter = SipAdapter(trunk=None, listen=("127.0.0.1", 0), rtp_ports=(20000, 60000))
    proxy, caller = Peer(), Peer()
    outcomes: list[TransferOutcome] = []

    async def transfer(connection: Connection) -> None:
        target = TransferTarget(None, "sip:desk@127.0.0.1:5099", "cold", "t" * 32)
        outcomes.append(await connection.transfer(target))

    async def route(_offer: InboundOffer) -> ConversationRunner | None:
        return transfer

    await adapter.start(route)
    try:
        worker = adapter.listen_address
        record_route = f"<sip:127.0.0.1:{proxy.port};lr>"
        caller.send(invite(caller, worker, record_route=record_route), worker)
        ok = await caller.response(200, "INVITE")
        caller.send(ack_for(ok, caller), worker)
        # Stopped now, the adapter closes its socket once this call is over.
        await adapter.stop()
        refer = await proxy.receive(within=10)
        assert refer.startswith(f"REFER sip:+15557654321@127.0.0.1:{caller.port} SIP/2.0")
        assert headers(refer, "Route") == [record_route]
        assert header(refer, "Refer-To") == "<sip:desk@127.0.0.1:5099>"
        # The proxy passes the far end's refusal back: the transfer is refused, not stuck; the
        # agent then hangs up, along the same route.
        proxy.send(_answer(refer, "405 Method Not Allowed"), worker)
        bye = await proxy.receive(within=10)
        while bye.startswith("REFER "):  # retransmitted before our answer arrived
            bye = await proxy.receive(within=10)
        assert bye.startswith("BYE ") and headers(bye, "Route") == [record_route]
        proxy.send(_answer(bye, "200 OK"), worker)
        await asyncio.wait_for(adapter.wait_closed(), 30)
        assert outcomes == [TransferOutcome(False, "refused (405 Method Not Allowed)")]
    finally:
        await adapter.stop()
        proxy.close()
        caller.close()


def _answer(request: str, status: str) -> str:
    return "\n".join(
        [
            f"SIP/2.0 {status}",
            *(f"Via: {via}" for via in headers(request, "Via")),
            *(f"{name}: {header(request, name)}" for name in ("From", "To", "Call-ID", "CSeq")),
            "Content-Length: 0",
            "",
            "",
        ]
    )
