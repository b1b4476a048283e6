"""What goes on the wire for the SIP adapter: the UDP socket, the SDP offer, URI users, the ACK
aiosipua leaves to its user."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from typing import Any

from aiosipua import SdpMessage, SipMessage, SipRequest, SipResponse, UdpSipTransport, build_sdp
from aiosipua.message import missing_required_headers
from aiosipua.transport import _stamp_via_received

logger = logging.getLogger("callplane.telephony.sip")

USER_AGENT = "callplane"
#: What the parser or the first look at a header raises on a malformed message.
_METHOD = re.compile(r"[A-Za-z][A-Za-z0-9._!%*+`'~-]{0,31}")
UNPARSEABLE = (ValueError, IndexError, KeyError, UnicodeError, AttributeError, TypeError)
#: G.711 µ-law and A-law, the codecs every trunk speaks; offered in this order.
CODECS = {0: "PCMU", 8: "PCMA"}
#: The payload type our offers give telephone-events (aiosipua's ``build_sdp``).
DEFAULT_TELEPHONE_EVENTS = 101


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

    def _dispatch(self, data: bytes, addr: tuple[str, int]) -> None:
        """aiosipua's, minus its traceback: a datagram that is not SIP is anyone's to send."""
        complaints = _Complaints()
        parser_log.addFilter(complaints)
        try:
            message = SipMessage.parse(data)
            if isinstance(message, SipRequest):
                _stamp_via_received(message, addr)
        except Exception as exc:
            log_unparseable(data, addr, exc)
            return
        finally:
            parser_log.removeFilter(complaints)
        problem = complaints.heard or malformed(message)
        if problem is not None:
            log_unparseable(data, addr, ValueError(problem))
            return
        if self.on_message is not None:
            self.on_message(message, addr)


#: aiosipua's parser warns in its own words (a body shorter than its Content-Length, ...).
parser_log = logging.getLogger("aiosipua.message")


class _Complaints(logging.Filter):
    """Holds back what the parser says about one message: it becomes our one line."""

    heard: str | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            self.heard = self.heard or record.getMessage()
            return False
        return True


def malformed(message: SipMessage) -> str | None:
    """What aiosipua parses but nobody can act on (it would log it with a text of its own)."""
    if isinstance(message, SipRequest):
        if not _METHOD.fullmatch(message.method):
            return "not a SIP method"
        missing = missing_required_headers(message)
        if missing:
            return f"missing {', '.join(missing)}"
    elif isinstance(message, SipResponse) and not 100 <= message.status_code <= 699:
        return "not a SIP status"
    return None


def log_unparseable(data: bytes, addr: tuple[str, int], exc: BaseException) -> None:
    """One structured line for a SIP message we cannot read (never a traceback)."""
    first_line = data.split(b"\n", 1)[0][:80].decode("utf-8", "replace").strip()
    logger.warning(
        "unparseable SIP message",
        extra={
            "peer": f"{addr[0]}:{addr[1]}",
            "bytes": len(data),
            "first_line": first_line,
            "error": f"{type(exc).__name__}: {exc}"[:200],
        },
    )


def release(sockets: list[socket.socket]) -> None:
    for sock in sockets:
        sock.close()
    sockets.clear()


def offer(host: str, port: int) -> SdpMessage:
    offer = build_sdp(host, port, 0, CODECS[0], dtmf_payload_type=DEFAULT_TELEPHONE_EVENTS)
    audio = offer.audio
    assert audio is not None
    for payload_type, name in list(CODECS.items())[1:]:
        audio.formats.insert(len(CODECS) - 1, str(payload_type))
        audio.attributes["rtpmap"].insert(len(CODECS) - 1, f"{payload_type} {name}/8000")
    return offer


def telephone_events(sdp: SdpMessage | None) -> int | None:
    """The payload type the far end's SDP gives RFC 4733 telephone-events, or None when it
    names none (its phone would not understand keypresses sent that way)."""
    audio = sdp.audio if sdp is not None else None
    for codec in audio.codecs if audio is not None else ():
        if (codec.encoding_name or "").lower() == "telephone-event":
            return int(codec.payload_type)
    return None


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
