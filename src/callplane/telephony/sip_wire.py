"""What goes on the wire for the SIP adapter: the UDP socket, the SDP offer, URI users, the ACK
aiosipua leaves to its user."""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

from aiosipua import SdpMessage, SipRequest, SipResponse, UdpSipTransport, build_sdp

logger = logging.getLogger("callplane.telephony.sip")

USER_AGENT = "callplane"
#: G.711 µ-law and A-law, the codecs every trunk speaks; offered in this order.
CODECS = {0: "PCMU", 8: "PCMA"}


class UdpTransport(UdpSipTransport):
    """aiosipua's UDP transport, bound by us: its own protocol asserts a transport class that
    Python 3.11's selector loop does not derive from; and with port 0 the real port is kept."""

    async def start(self) -> None:
        owner = self

        class Protocol(asyncio.DatagramProtocol):
            def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
                owner._dispatch(data, (str(addr[0]), int(addr[1])))

            def error_received(self, exc: Exception) -> None:
                # ICMP unreachable from a far end that went away: that call's problem only.
                logger.debug("SIP socket: %s", exc)

        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(Protocol, local_addr=self.local_addr)
        self._udp_transport = transport
        self.local_addr = transport.get_extra_info("sockname")[:2]


def release(sockets: list[socket.socket]) -> None:
    for sock in sockets:
        sock.close()
    sockets.clear()


def offer(host: str, port: int) -> SdpMessage:
    offer = build_sdp(host, port, 0, CODECS[0])
    audio = offer.audio
    assert audio is not None
    for payload_type, name in list(CODECS.items())[1:]:
        audio.formats.insert(len(CODECS) - 1, str(payload_type))
        audio.attributes["rtpmap"].insert(len(CODECS) - 1, f"{payload_type} {name}/8000")
    return offer


def sip_user(number: str | None) -> str:
    """A phone number as a SIP URI user part: digits and a leading ``+`` only."""
    if not number:
        return ""
    kept = "".join(ch for ch in number if ch.isdigit() or ch == "+")
    return kept[:1] + kept[1:].replace("+", "")


async def resolve(host: str) -> str:
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, None, family=socket.AF_INET, type=socket.SOCK_DGRAM
    )
    return str(infos[0][4][0])


def failure_ack(invite: SipRequest, response: SipResponse) -> SipRequest:
    """The ACK of a non-2xx final answer, part of the INVITE transaction (RFC 3261 §17.1.1.3):
    the INVITE's request-URI, Via (same branch), From and CSeq number; the answer's To."""
    cseq = invite.cseq
    ack = SipRequest(method="ACK", uri=invite.uri)
    for name in ("Via", "From", "Call-ID"):
        value = invite.headers.get_first(name)
        if value:
            ack.headers.set_single(name, value)
    to = response.headers.get_first("To")
    if to:
        ack.headers.set_single("To", to)
    ack.headers.set_single("CSeq", f"{cseq.seq if cseq else 1} ACK")
    ack.headers.set_single("Max-Forwards", "70")
    for route in invite.headers.get("route"):
        ack.headers.append("Route", route)
    return ack
