"""A worker's SIP side behind the Kamailio edge (docs/sip-edge.md), over real UDP on loopback.

A plain UDP socket plays the proxy: it sends what Kamailio sends (a record-routed INVITE,
OPTIONS probes, garbage) and reads exactly what the adapter answers.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from callplane.telephony.base import Connection, ConversationRunner, InboundOffer
from callplane.telephony.sip import SipAdapter
from tests.sipp_peer import free_udp_port


class Peer:
    """One UDP socket on loopback, speaking SIP text."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.port = int(self.sock.getsockname()[1])

    def send(self, text: str | bytes, to: tuple[str, int]) -> None:
        data = text if isinstance(text, bytes) else text.replace("\n", "\r\n").encode()
        self.sock.sendto(data, to)

    async def receive(self, within: float = 5.0) -> str:
        data = await asyncio.wait_for(
            asyncio.get_running_loop().sock_recv(self.sock, 65535), within
        )
        return data.decode()

    async def response(self, status: int, method: str, within: float = 5.0) -> str:
        """The next response with this status to ``method`` (provisionals skipped)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            text = await self.receive(max(0.01, deadline - loop.time()))
            first, cseq = text.split("\r\n", 1)[0], header(text, "CSeq")
            if first.startswith(f"SIP/2.0 {status} ") and cseq.endswith(method):
                return text

    def close(self) -> None:
        self.sock.close()


def header(message: str, name: str) -> str:
    values = headers(message, name)
    return values[0] if values else ""


def headers(message: str, name: str) -> list[str]:
    head = message.split("\r\n\r\n", 1)[0]
    found = []
    for line in head.split("\r\n")[1:]:
        key, _, value = line.partition(":")
        if key.strip().lower() == name.lower():
            found.append(value.strip())
    return found


def invite(peer: Peer, worker: tuple[str, int], *, record_route: str | None) -> str:
    media = free_udp_port(pair=True)
    sdp = (
        "v=0\no=- 1 1 IN IP4 127.0.0.1\ns=-\nc=IN IP4 127.0.0.1\nt=0 0\n"
        f"m=audio {media} RTP/AVP 0\na=rtpmap:0 PCMU/8000\n"
    ).replace("\n", "\r\n")
    rr = f"Record-Route: {record_route}\n" if record_route else ""
    call_id = uuid.uuid4().hex
    return (
        f"INVITE sip:+14155550100@{worker[0]}:{worker[1]} SIP/2.0\n"
        f"Via: SIP/2.0/UDP 127.0.0.1:{peer.port};branch=z9hG4bK{call_id[:10]};rport\n"
        f"{rr}"
        f"From: <sip:+15557654321@127.0.0.1:{peer.port}>;tag=caller{call_id[:6]}\n"
        f"To: <sip:+14155550100@{worker[0]}:{worker[1]}>\n"
        f"Call-ID: {call_id}\n"
        "CSeq: 1 INVITE\n"
        f"Contact: <sip:+15557654321@127.0.0.1:{peer.port}>\n"
        "Max-Forwards: 69\n"
        "Content-Type: application/sdp\n"
        f"Content-Length: {len(sdp)}\n\n"
    ) + sdp.replace("\r\n", "\n")


def ack_for(ok: str, peer: Peer) -> str:
    routes = "".join(f"Route: {value}\n" for value in headers(ok, "Record-Route"))
    contact = header(ok, "Contact").strip("<>")
    return (
        f"ACK {contact} SIP/2.0\n"
        f"Via: SIP/2.0/UDP 127.0.0.1:{peer.port};branch=z9hG4bKack{uuid.uuid4().hex[:8]}\n"
        f"{routes}"
        f"From: {header(ok, 'From')}\n"
        f"To: {header(ok, 'To')}\n"
        f"Call-ID: {header(ok, 'Call-ID')}\n"
        "CSeq: 1 ACK\nMax-Forwards: 70\nContent-Length: 0\n\n"
    )


def options(peer: Peer, worker: tuple[str, int]) -> str:
    tag = uuid.uuid4().hex[:8]
    return (
        f"OPTIONS sip:{worker[0]}:{worker[1]} SIP/2.0\n"
        f"Via: SIP/2.0/UDP 127.0.0.1:{peer.port};branch=z9hG4bK{tag}\n"
        f"From: <sip:edge@127.0.0.1>;tag={tag}\n"
        f"To: <sip:{worker[0]}:{worker[1]}>\n"
        f"Call-ID: probe-{tag}\n"
        "CSeq: 10 OPTIONS\nMax-Forwards: 70\nContent-Length: 0\n\n"
    )


@pytest.fixture
def peers() -> Iterator[tuple[Peer, Peer]]:
    proxy, caller = Peer(), Peer()
    yield proxy, caller
    proxy.close()
    caller.close()


def holding(seconds: float, connections: list[Connection]) -> ConversationRunner:
    async def hold(connection: Connection) -> None:
        connections.append(connection)
        await asyncio.sleep(seconds)  # then the adapter hangs up: our BYE

    return hold


@pytest.fixture
async def adapter() -> AsyncIterator[SipAdapter]:
    sip = SipAdapter(trunk=None, listen=("127.0.0.1", 0), rtp_ports=(20000, 60000))
    yield sip
    await sip.stop()


async def test_answer_copies_record_route_and_our_bye_follows_the_route_set(
    adapter: SipAdapter, peers: tuple[Peer, Peer]
) -> None:
    proxy, caller = peers
    connections: list[Connection] = []

    async def route(_offer: InboundOffer) -> ConversationRunner | None:
        return holding(0.3, connections)

    await adapter.start(route)
    worker = adapter.listen_address
    # Two proxies on the way, as Kamailio writes them (double record-route looks the same).
    record_route = f"<sip:127.0.0.1:{proxy.port};lr>, <sip:127.0.0.2:5999;lr>"
    # Sent from the caller's socket: the BYE must go to the first route, not back here.
    caller.send(invite(caller, worker, record_route=record_route), worker)
    ok = await caller.response(200, "INVITE")
    assert ", ".join(headers(ok, "Record-Route")) == record_route
    caller.send(ack_for(ok, caller), worker)

    bye = await proxy.receive(within=5)
    assert bye.startswith(f"BYE sip:+15557654321@127.0.0.1:{caller.port} SIP/2.0")
    assert headers(bye, "Route") == [f"<sip:127.0.0.1:{proxy.port};lr>", "<sip:127.0.0.2:5999;lr>"]
    assert connections and connections[0].ended_by == "local"


async def test_without_record_route_nothing_changes(
    adapter: SipAdapter, peers: tuple[Peer, Peer]
) -> None:
    _, caller = peers

    async def route(_offer: InboundOffer) -> ConversationRunner | None:
        return holding(0.2, [])

    await adapter.start(route)
    worker = adapter.listen_address
    caller.send(invite(caller, worker, record_route=None), worker)
    ok = await caller.response(200, "INVITE")
    assert headers(ok, "Record-Route") == []
    caller.send(ack_for(ok, caller), worker)
    bye = await caller.receive(within=5)
    assert bye.startswith("BYE ") and headers(bye, "Route") == []


async def test_options_200_while_taking_calls_then_503_and_invites_503_while_draining(
    adapter: SipAdapter, peers: tuple[Peer, Peer]
) -> None:
    proxy, caller = peers
    connections: list[Connection] = []

    async def route(_offer: InboundOffer) -> ConversationRunner | None:
        return holding(1.5, connections)

    await adapter.start(route)
    worker = adapter.listen_address
    proxy.send(options(proxy, worker), worker)
    probe = await proxy.response(200, "OPTIONS")
    assert "INVITE" in header(probe, "Allow")

    caller.send(invite(caller, worker, record_route=None), worker)
    ok = await caller.response(200, "INVITE")
    caller.send(ack_for(ok, caller), worker)

    await adapter.stop()  # a drain: the call in progress goes on
    proxy.send(options(proxy, worker), worker)
    await proxy.response(503, "OPTIONS")
    proxy.send(invite(proxy, worker, record_route=None), worker)
    await proxy.response(503, "INVITE")
    assert connections and not connections[0].ended  # still talking
    bye = await caller.receive(within=5)  # it ends on its own
    assert bye.startswith("BYE ")


class Captured(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x00\xff\xfe garbage \x80",
        b"INVITE\r\n\r\n",
        b"SIP/2.0 abc Broken\r\nCSeq: x\r\n\r\n",
        b"OPTIONS sip:x SIP/2.0\r\nCall-ID: a\r\nCSeq: 1 OPTIONS\r\n\r\n",
        b"INVITE sip:a@b SIP/2.0\r\nContent-Length: 99999\r\n\r\nshort",
    ],
)
async def test_unparseable_messages_are_one_structured_line_never_a_traceback(
    adapter: SipAdapter, peers: tuple[Peer, Peer], garbage: bytes
) -> None:
    proxy, _ = peers
    captured = Captured()
    loggers = [logging.getLogger(name) for name in ("callplane", "aiosipua")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(captured)
        logger.setLevel(logging.DEBUG)
    try:
        await adapter.start(lambda _offer: asyncio.sleep(0, None))
        worker = adapter.listen_address
        proxy.send(garbage, worker)
        # Still answering: the probe after the garbage gets its 200.
        proxy.send(options(proxy, worker), worker)
        await proxy.response(200, "OPTIONS")
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(captured)
            logger.setLevel(level)
    assert all(record.exc_info is None for record in captured.records)
    warnings = [r for r in captured.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in warnings] == ["unparseable SIP message"]
    for record in warnings:
        assert record.__dict__["peer"] == f"127.0.0.1:{proxy.port}"
        assert record.__dict__["bytes"] == len(garbage)


async def test_sip_advertise_is_the_contact_and_the_sdp_address(peers: tuple[Peer, Peer]) -> None:
    from callplane.settings import Settings

    _, caller = peers
    settings = Settings(
        sip_listen="127.0.0.1:0", sip_advertise="127.0.0.2:5999", sip_rtp_ports="20000-60000"
    )
    adapter = SipAdapter.from_settings(settings)

    async def route(_offer: InboundOffer) -> ConversationRunner | None:
        return holding(0.2, [])

    await adapter.start(route)
    try:
        worker = adapter.listen_address
        caller.send(invite(caller, worker, record_route=None), worker)
        ok = await caller.response(200, "INVITE")
        caller.send(ack_for(ok, caller), worker)
        await caller.receive(within=5)  # the BYE
    finally:
        await adapter.stop()
    assert header(ok, "Contact") == "<sip:127.0.0.2:5999>"
    assert "c=IN IP4 127.0.0.2" in ok  # media goes straight to the worker


async def test_an_invite_retransmitted_after_our_answer_is_not_a_new_dialog(
    adapter: SipAdapter, peers: tuple[Peer, Peer]
) -> None:
    _, caller = peers

    async def route(_offer: InboundOffer) -> ConversationRunner | None:
        return holding(1.0, [])

    await adapter.start(route)
    worker = adapter.listen_address
    request = invite(caller, worker, record_route=None)
    caller.send(request, worker)
    ok = await caller.response(200, "INVITE")
    caller.send(request, worker)  # it crossed our 200 OK
    again = await caller.receive(within=5)  # our 200, retransmitted until the ACK (no 481)
    assert again.startswith("SIP/2.0 200 ") and header(again, "To") == header(ok, "To")
    caller.send(ack_for(ok, caller), worker)
    bye = await caller.receive(within=5)
    assert bye.startswith("BYE ")
