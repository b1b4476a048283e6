"""The SIP network (``CALLPLANE_TELEPHONY=sip``, docs/engine-core.md).

Signalling is aiosipua (MIT, pure Python) over one UDP socket at ``CALLPLANE_SIP_LISTEN``, used
both to answer INVITEs and to send ours to the trunk; media is aiortp (G.711 PCMU/PCMA, one RTP
port pair per call from ``CALLPLANE_SIP_RTP_PORTS``). Everything here is per call: a malformed
message, a codec mismatch or a crashed conversation ends that call and is logged with its call
ref, and the socket and every other call carry on.

aiosipua is a micro-library: it leaves the INVITE client transaction's reliability to its user.
This module adds what a real trunk needs of it: INVITE and BYE retransmission over UDP (RFC 3261
timers A/E), the ACK to a non-2xx final answer (§17.1.1.3), the ACK and BYE for a 200 OK that
crosses our CANCEL, and 404 for INVITEs to numbers nobody answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Awaitable
from typing import TYPE_CHECKING
from urllib.parse import unquote

from aiortp import RTPSession
from aiosipua import (
    DialogState,
    IncomingCall,
    OutgoingCall,
    SipDigestAuth,
    SipRequest,
    SipResponse,
    SipUAC,
    SipUAS,
    UdpSipTransport,
    negotiate_sdp,
    parse_uri,
)
from aiosipua.dialog import Dialog
from aiosipua.sdp import SdpNegotiationError

from callplane.observability.metrics import count_sip_message
from callplane.telephony.audio_line import AudioLine
from callplane.telephony.base import (
    Connection,
    DialFailed,
    DialOutcome,
    DialRequest,
    InboundOffer,
    InboundRouter,
    TelephonyAdapter,
    TransferOutcome,
    TransferTarget,
)
from callplane.telephony.bridge import RING_SECONDS
from callplane.telephony.media import SipConnection
from callplane.telephony.sip_config import Trunk, parse_host_port, parse_port_range
from callplane.telephony.sip_dialog import hangup, keep_record_route, next_hop
from callplane.telephony.sip_transfer import SCREEN_POP_HEADER, Referrals, refer_to_uri
from callplane.telephony.sip_wire import (
    CODECS,
    DEFAULT_TELEPHONE_EVENTS,
    UNPARSEABLE,
    USER_AGENT,
    UdpTransport,
    failure_ack,
    log_unparseable,
    offer,
    release,
    resolve,
    sip_user,
    telephone_events,
)

if TYPE_CHECKING:
    from callplane.settings import Settings

logger = logging.getLogger("callplane.telephony.sip")

#: RFC 3261 timer values for UDP retransmission.
T1 = 0.5
T2 = 4.0
TIMEOUT_64T1 = 64 * T1

#: What an OPTIONS answer says we take.
ALLOW = "INVITE, ACK, BYE, CANCEL, OPTIONS"

#: Ports tried for an inbound call's RTP before it is refused (488).
RTP_BIND_ATTEMPTS = 3
#: When stopping, how long the last calls' BYEs may wait for their answer.
BYE_LINGER_SECONDS = 4 * T1

BUSY = {486, 600}
NO_ANSWER = {408, 480}


def outcome_for(status: int) -> DialOutcome:
    """The docs/engine-core.md lifecycle table: which terminal status a SIP failure leads to."""
    if status in BUSY:
        return "busy"
    if status in NO_ANSWER:
        return "no_answer"
    return "failed"


class SipAdapter(TelephonyAdapter):
    def __init__(
        self,
        *,
        trunk: Trunk | None,
        listen: tuple[str, int],
        rtp_ports: tuple[int, int],
        advertised_host: str | None = None,
        advertised_port: int | None = None,
        media_timeout_seconds: float | None = None,
    ) -> None:
        self.trunk = trunk
        self._listen = listen
        self._rtp_ports = rtp_ports
        self._advertised_host = advertised_host
        self._advertised_port = advertised_port
        self._media_timeout = media_timeout_seconds
        self._transport: UdpSipTransport | None = None
        self._media_address: str | None = None
        self._uac: SipUAC | None = None
        self._uas: SipUAS | None = None
        self._route: InboundRouter | None = None
        self._accepting = False
        self._next_rtp_port = rtp_ports[0]
        self._connections: dict[str, SipConnection] = {}
        # INVITEs of ours still waiting for a final answer (kept past CANCEL for the 487).
        self._dialing: dict[str, OutgoingCall] = {}
        self._cancelled_inbound: set[str] = set()
        self._inbound: dict[str, IncomingCall] = {}
        self._refused: dict[str, tuple[IncomingCall, int, str]] = {}
        self._answered: dict[tuple[str, str], int] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._signalling: tuple[str, int] | None = None
        self._referrals = Referrals()
        self._closed = asyncio.Event()

    @classmethod
    def from_settings(cls, settings: Settings) -> SipAdapter:
        advertised_host, advertised_port = settings.sip_advertised_host, None
        if settings.sip_advertise:
            # HOST or HOST:PORT; the port defaults to the one listened on.
            advertised_host, port = parse_host_port(settings.sip_advertise, default_port=0)
            advertised_port = port or None
        return cls(
            trunk=Trunk.parse(settings.sip_trunk) if settings.sip_trunk else None,
            listen=parse_host_port(settings.sip_listen, default_port=5060),
            rtp_ports=parse_port_range(settings.sip_rtp_ports),
            advertised_host=advertised_host,
            advertised_port=advertised_port,
            media_timeout_seconds=settings.media_timeout_seconds,
        )

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def listen_address(self) -> tuple[str, int]:
        """Where the SIP socket is bound (the real port when the setting asked for 0)."""
        if self._transport is None:
            return self._listen
        return self._transport.local_addr

    @property
    def _media_host(self) -> str:
        """The address written into SDP and Contact (see ``_find_media_host``)."""
        return self._media_address or self._advertised_host or self.listen_address[0]

    async def _find_media_host(self) -> str:
        """The setting, else the listen address, else (listening on every interface) the
        address the system routes toward the trunk, else loopback."""
        host = self._advertised_host or self.listen_address[0]
        if host not in ("0.0.0.0", ""):
            return host
        if self.trunk is not None:
            with contextlib.suppress(OSError):
                trunk_ip = await resolve(self.trunk.host)
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
                    probe.connect((trunk_ip, self.trunk.port))  # UDP: nothing is sent
                    return str(probe.getsockname()[0])
        return "127.0.0.1"

    async def start(self, route_inbound: InboundRouter) -> None:
        transport = UdpTransport(local_addr=self._listen)
        await transport.start()
        self._transport = transport
        self._media_address = await self._find_media_host()
        advertised = (self._media_host, self._advertised_port or transport.local_addr[1])
        uac = SipUAC(transport, advertised_addr=advertised)
        uas = SipUAS(transport, user_agent=USER_AGENT, uac=uac, advertised_addr=advertised)
        uas.on_invite = self._on_invite
        uas.on_bye = self._on_bye
        uas.on_cancel = self._on_cancel
        uas.on_ack_timeout = self._on_ack_timeout
        uas.on_options = self._on_options
        uas.on_transfer_progress = self._referrals.on_progress
        # Responses pass through here first: the reliability aiosipua leaves to its user.
        transport.on_message = self._on_message
        self._signalling = advertised
        self._transport, self._uac, self._uas = transport, uac, uas
        self._route = route_inbound
        self._accepting = True
        logger.info("SIP listening on %s:%d (UDP)", *transport.local_addr)

    async def stop(self) -> None:
        """Refuse new calls; the socket closes once the calls in progress have ended."""
        self._accepting = False
        if not self._connections:
            await self._close_transport()

    async def _close_transport(self) -> None:
        for task in self._tasks:  # retransmissions and watchers: nothing left to send them on
            if task is not asyncio.current_task():
                task.cancel()
        if self._uac is not None:
            self._uac.close()
        if self._transport is not None:
            await self._transport.stop()
        self._transport = None
        self._closed.set()

    async def wait_closed(self) -> None:
        """Return once the socket is closed: stopped, and the last calls' signalling (their
        BYEs) done with."""
        await self._closed.wait()

    def _spawn(self, coroutine: Awaitable[None], name: str) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coroutine)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _send(self, message: SipRequest | SipResponse, addr: tuple[str, int]) -> None:
        if self._transport is not None:
            self._transport.send(message, addr)
            count_sip_message(message, "sent")  # issue 29

    # -- outbound -------------------------------------------------------------------------

    async def dial(self, request: DialRequest) -> Connection:
        connection, _ = await self._place(request)
        return connection

    async def _transfer_leg(self, target: TransferTarget, ref: str) -> tuple[AudioLine, str]:
        """A warm transfer's second leg: the destination dialled like an outbound call (a
        ``number`` through the trunk, a ``sip`` URI directly), with the screen-pop header."""
        request = DialRequest(
            to_number=target.number or "",
            from_number=None,
            ring_timeout_seconds=RING_SECONDS,
            call_ref=f"{ref} transfer",
            uri=target.sip,
            headers=((SCREEN_POP_HEADER, target.screen_pop_token),),
        )
        return await self._place(request)

    async def _callee(
        self, request: DialRequest
    ) -> tuple[str, tuple[str, int], SipDigestAuth | None]:
        """Who the INVITE is for, where it is sent, and the trunk's credentials."""
        if request.uri is not None:
            try:
                uri = parse_uri(request.uri)
                if not request.uri.lower().startswith("sip:") or not uri.host:
                    raise ValueError("no host")
                return request.uri, (await resolve(uri.host), uri.port or 5060), None
            except (ValueError, IndexError, OSError):
                raise DialFailed("failed", f"{request.uri} is not a SIP URI we can reach") from None
        trunk = self.trunk
        if trunk is None:
            raise DialFailed("failed", "no SIP trunk configured (CALLPLANE_SIP_TRUNK)")
        auth = SipDigestAuth(trunk.user, trunk.password or "") if trunk.user else None
        callee = f"sip:{sip_user(request.to_number)}@{trunk.host}:{trunk.port}"
        return callee, (await resolve(trunk.host), trunk.port), auth

    async def _place(self, request: DialRequest) -> tuple[SipConnection, str]:
        """Dial; the answered connection and its SIP Call-ID."""
        ref = request.call_ref
        callee, remote, auth = await self._callee(request)
        if self._uac is None or not self._accepting:
            raise DialFailed("failed", "the SIP adapter is not running")
        port, reservation = self._reserve_rtp_port()
        sdp_offer = offer(self._media_host, port)
        caller = sip_user(request.from_number) or USER_AGENT
        listen_port = self.listen_address[1]
        call = self._uac.send_invite(
            f"sip:{caller}@{self._media_host}:{listen_port}",
            callee,
            remote,
            sdp_offer,
            extra_headers=dict(request.headers) or None,
            user_agent=USER_AGENT,
            auth=auth,
        )
        self._dialing[call.call_id] = call
        logger.info("call %s: INVITE %s (SIP Call-ID %s)", ref, call.callee, call.call_id)
        retransmit = asyncio.create_task(self._retransmit_invite(call))
        try:
            await call.wait_answered(timeout=request.ring_timeout_seconds)
        except TimeoutError:
            self._abandon(call, ref)
            release(reservation)
            raise DialFailed("no_answer", "ring timeout") from None
        except RuntimeError:
            release(reservation)
            status, reason = call._reject_code, call._reject_reason
            logger.info("call %s: refused with %d %s", ref, status, reason)
            raise DialFailed(outcome_for(status), f"{status} {reason}".strip()) from None
        except BaseException:
            self._abandon(call, ref)
            release(reservation)
            raise
        finally:
            retransmit.cancel()
            self._answered.pop((call.call_id, "INVITE"), None)
        self._dialing.pop(call.call_id, None)
        try:
            connection = await self._connect_answered(call, port, reservation, ref)
        except Exception as exc:
            logger.warning("call %s: answered but media failed: %s", ref, exc)
            self._send_bye(call)
            raise DialFailed("failed", f"media setup failed: {exc}") from None
        logger.info("call %s: answered", ref)
        return connection, call.call_id

    async def _connect_answered(
        self, call: OutgoingCall, port: int, reservation: list[socket.socket], ref: str
    ) -> SipConnection:
        answer = call.sdp_answer
        if answer is None or answer.rtp_address is None or answer.audio is None:
            raise ValueError("the answer carries no audio SDP")
        chosen = next((int(f) for f in answer.audio.formats if f.isdigit()), None)
        if chosen not in CODECS:
            raise ValueError(f"the answer chose payload type {chosen}, neither PCMU nor PCMA")
        keys = telephone_events(answer)
        rtp = await self._open_rtp(port, reservation, answer.rtp_address, chosen, keys)
        connection = SipConnection(
            rtp,
            call_ref=ref,
            telephone_events=keys,
            send_bye=lambda: self._hangup_outbound(call),
            media_timeout_seconds=self._media_timeout,
            refer=lambda target: self._refer(call.dialog, call.remote_addr, target),
            dial_leg=lambda target: self._transfer_leg(target, ref),
        )
        self._register(call.call_id, connection)
        return connection

    async def _hangup_outbound(self, call: OutgoingCall) -> None:
        self._send_bye(call)

    def _send_bye(self, call: OutgoingCall) -> None:
        if self._uac is None or self._transport is None:
            return
        with contextlib.suppress(ValueError):  # dialog already over
            bye = self._uac.send_bye(call.dialog, call.remote_addr)
            self._spawn(self._retransmit(bye, call.remote_addr), f"bye {call.call_id}")

    def _abandon(self, call: OutgoingCall, ref: str) -> None:
        """Give up on a call not yet handed to the engine: CANCEL while it rings (the 487 is
        ACKed by ``_on_response``), BYE when the answer slipped in just before."""
        if self._uac is None or self._transport is None:
            return
        if call.dialog.state is DialogState.CONFIRMED:
            logger.info("call %s: answered as we gave up; hanging up", ref)
            self._send_bye(call)
            return
        with contextlib.suppress(ValueError):  # already refused
            cancel = self._uac.send_cancel(call)
            logger.info("call %s: CANCEL sent", ref)
            self._spawn(self._retransmit(cancel, call.remote_addr), f"cancel {call.call_id}")
        # The 487 normally follows at once; forget the call even if it never does.
        asyncio.get_running_loop().call_later(TIMEOUT_64T1, self._dialing.pop, call.call_id, None)

    async def _retransmit_invite(self, call: OutgoingCall) -> None:
        """Timer A: resend the current INVITE (auth retries replace it) until it gets an answer."""
        interval = T1
        while True:
            await asyncio.sleep(interval)
            invite = call.invite
            cseq = invite.cseq
            if cseq is None or self._answered.get((call.call_id, "INVITE"), -1) >= cseq.seq:
                interval = T1
                continue
            self._send(invite, call.remote_addr)
            interval = min(interval * 2, T2)

    async def _retransmit(self, request: SipRequest, addr: tuple[str, int]) -> None:
        """Timer E: resend a non-INVITE request until any response to it arrives."""
        call_id, cseq = request.call_id or "", request.cseq
        if cseq is None:
            return
        key = (call_id, cseq.method.upper())
        interval, waited = T1, 0.0
        while waited < TIMEOUT_64T1:
            await asyncio.sleep(interval)
            waited += interval
            if self._answered.get(key, -1) >= cseq.seq:
                break
            self._send(request, addr)
            interval = min(interval * 2, T2)
        self._answered.pop(key, None)

    # -- everything that arrives ----------------------------------------------------------

    def _on_message(self, message: SipRequest | SipResponse, addr: tuple[str, int]) -> None:
        try:
            if isinstance(message, SipResponse):
                self._on_response(message, addr)
            elif self._answered_invite_again(message):
                return  # our 200 OK is retransmitted until the ACK: that answers it
            assert self._uas is not None
            self._uas._on_message(message, addr)
        except UNPARSEABLE as exc:
            # aiosipua parses headers when first read: a malformed one surfaces here.
            raw = b""
            with contextlib.suppress(Exception):
                raw = bytes(message)
            log_unparseable(raw, addr, exc)
        except Exception:
            logger.exception("SIP message from %s:%d could not be handled", *addr)

    def _answered_invite_again(self, request: SipRequest) -> bool:
        """A retransmission of an INVITE we already answered (our 200 crossed it): aiosipua would
        take it for a re-INVITE outside the dialog (no To tag) and answer 481."""
        if request.method.upper() != "INVITE" or self._uas is None:
            return False
        to = request.to_addr
        call = self._uas._calls.get(request.call_id or "")
        if (
            call is None
            or (to is not None and to.tag)
            or call.dialog.state is not DialogState.CONFIRMED
        ):
            return False
        first, again = call.invite.cseq, request.cseq
        return first is not None and again is not None and first.seq == again.seq

    def _on_response(self, response: SipResponse, addr: tuple[str, int]) -> None:
        count_sip_message(response, "received")  # issue 29
        call_id, cseq = response.call_id or "", response.cseq
        if cseq is None:
            return
        key = (call_id, cseq.method.upper())
        self._answered[key] = max(self._answered.get(key, -1), cseq.seq)
        self._referrals.on_response(response)
        call = self._dialing.get(call_id)
        if key[1] != "INVITE" or call is None or response.status_code < 200:
            return
        if response.status_code >= 300:
            self._ack_failure(call, response)
            if response.status_code not in (401, 407) or call._auth_attempts:
                self._dialing.pop(call_id, None)
        elif self._uac is not None and call_id not in self._uac._calls:
            # Answered after we cancelled: take the call and end it at once.
            logger.info("SIP Call-ID %s answered after CANCEL; hanging up", call_id)
            self._dialing.pop(call_id, None)
            self._uac._calls[call_id] = call
            self._uac.handle_response(response, addr)
            self._send_bye(call)

    def _ack_failure(self, call: OutgoingCall, response: SipResponse) -> None:
        self._send(failure_ack(call.invite, response), call.remote_addr)

    def _on_bye(self, call: IncomingCall, _request: SipRequest) -> None:
        connection = self._connections.get(call.call_id)
        if connection is not None:
            self._spawn(connection.end("remote"), f"remote bye {call.call_id}")

    def _on_options(self, request: SipRequest, _addr: tuple[str, int]) -> None:
        """The edge's probe (docs/sip-edge.md): 200 while calls are taken, 503 once draining."""
        if self._uas is None:
            return
        if self._accepting:
            self._uas._send_error(request, 200, "OK", extra_headers={"Allow": ALLOW})
        else:
            self._uas._send_error(request, 503, "Service Unavailable")

    def _on_cancel(self, request: SipRequest, _addr: tuple[str, int]) -> None:
        self._cancelled_inbound.add(request.call_id or "")

    def _on_ack_timeout(self, call: IncomingCall) -> None:
        connection = self._connections.get(call.call_id)
        if connection is not None:
            logger.warning("call %s: our 200 OK was never acknowledged", connection.call_ref)
            self._spawn(connection.end("remote"), f"ack timeout {call.call_id}")

    # -- inbound --------------------------------------------------------------------------

    def _on_invite(self, call: IncomingCall) -> None:
        refused = self._refused.get(call.call_id)
        if refused is not None:
            first_call, status, reason = refused
            if self._uas is not None:
                self._uas._calls.pop(call.call_id, None)
            first_call.reject(status, reason)
            return
        first = self._inbound.get(call.call_id)
        if first is not None:
            # A retransmission (our 100 Trying was lost): aiosipua took it for a new call and
            # replaced the first one, whose dialog (our tag) the answer is being built on.
            if self._uas is not None:
                self._uas._calls[call.call_id] = first
            first.trying()
            return
        if not self._accepting:  # draining: the edge gives the call to another worker
            self._reject(call, 503, "Service Unavailable")
            return
        keep_record_route(call)
        self._inbound[call.call_id] = call
        self._spawn(self._answer(call), f"inbound {call.call_id}")

    async def _answer(self, call: IncomingCall) -> None:
        try:
            await self._answer_routed(call)
        finally:
            self._inbound.pop(call.call_id, None)

    async def _answer_routed(self, call: IncomingCall) -> None:
        ref = call.call_id
        request_uri = parse_uri(call.invite.uri)
        from_addr = call.invite.from_addr
        caller = from_addr.uri.user if from_addr and from_addr.uri else None
        offer = InboundOffer(
            to_number=unquote(request_uri.user or ""),
            from_number=unquote(caller) if caller else None,
            call_ref=ref,
        )
        logger.info("inbound SIP Call-ID %s: %s -> %s", ref, offer.from_number, offer.to_number)
        assert self._route is not None
        try:
            runner = await self._route(offer)
        except Exception:
            logger.exception("inbound SIP Call-ID %s: routing failed", ref)
            self._reject(call, 500, "Server Internal Error")
            return
        if runner is None:
            self._reject(call, 404, "Not Found")
            return
        for attempt in range(RTP_BIND_ATTEMPTS):
            port, reservation = self._reserve_rtp_port()
            try:
                if call.sdp_offer is None:
                    raise SdpNegotiationError("the INVITE carries no SDP offer")
                # Keypresses only as the offer maps them (its payload type), or not at all.
                keys = telephone_events(call.sdp_offer)
                answer, chosen = negotiate_sdp(
                    call.sdp_offer,
                    self._media_host,
                    port,
                    supported_codecs=list(CODECS),
                    dtmf_payload_type=keys or 0,
                )
                remote = call.sdp_offer.rtp_address
                if remote is None:
                    raise SdpNegotiationError("the offer names no RTP address")
                rtp = await self._open_rtp(port, reservation, remote, chosen, keys)
                break
            except OSError as exc:
                # Another process on this machine took the port between our reservation and the
                # bind (workers sharing one RTP range): nothing is answered yet, take another.
                release(reservation)
                if attempt < RTP_BIND_ATTEMPTS - 1:
                    continue
                logger.warning("inbound SIP Call-ID %s: %s", ref, exc)
                self._reject(call, 488, "Not Acceptable Here")
                return
            except SdpNegotiationError as exc:
                release(reservation)
                logger.warning("inbound SIP Call-ID %s: %s", ref, exc)
                self._reject(call, 488, "Not Acceptable Here")
                return
        if ref in self._cancelled_inbound or self._transport is None:
            self._cancelled_inbound.discard(ref)
            await rtp.close()
            return
        call.accept(answer)
        connection = SipConnection(
            rtp,
            call_ref=ref,
            telephone_events=keys,
            send_bye=lambda: self._hangup_inbound(call),
            media_timeout_seconds=self._media_timeout,
            # In-dialog, like our BYE: along the route set (the SIP edge), not back to the
            # INVITE's source.
            refer=lambda target: self._refer(call.dialog, next_hop(call), target),
            dial_leg=lambda target: self._transfer_leg(target, ref),
        )
        self._register(ref, connection)
        try:
            await runner(connection)
        except Exception:
            logger.exception("inbound SIP Call-ID %s: the conversation failed", ref)
        finally:
            await connection.hangup()

    async def _refer(
        self, dialog: Dialog, remote: tuple[str, int], target: TransferTarget
    ) -> TransferOutcome:
        """Cold transfer (``sip_transfer``): a number goes out through the trunk."""
        trunk = self.trunk
        uri = refer_to_uri(target, trunk.host if trunk else None, trunk.port if trunk else 5060)
        if uri is None:
            return TransferOutcome(False, "there is no trunk to reach that number")
        if self._uac is None or self._transport is None:
            return TransferOutcome(False, "the line is closed")

        def resend(request: SipRequest) -> None:
            self._spawn(self._retransmit(request, remote), f"refer {dialog.call_id}")

        return await self._referrals.refer(self._uac, dialog, remote, uri, target, resend)

    def _reject(self, call: IncomingCall, status: int, reason: str) -> None:
        if call.call_id not in self._cancelled_inbound and self._transport is not None:
            call.reject(status, reason)
            # The INVITE server transaction: a retransmission of this INVITE (the answer was
            # lost, or crossed it) gets the same answer again, not a second routing.
            self._refused[call.call_id] = (call, status, reason)
            asyncio.get_running_loop().call_later(
                TIMEOUT_64T1, self._refused.pop, call.call_id, None
            )
        self._cancelled_inbound.discard(call.call_id)
        if self._uas is not None:
            self._uas._calls.pop(call.call_id, None)

    async def _hangup_inbound(self, call: IncomingCall) -> None:
        if self._transport is None:
            return
        call._stop_retransmissions()
        sent = hangup(call, self._signalling or self.listen_address)
        if sent is not None:
            bye, destination = sent
            self._spawn(self._retransmit(bye, destination), f"bye {call.call_id}")
        if self._uas is not None:
            self._uas._calls.pop(call.call_id, None)

    # -- media ----------------------------------------------------------------------------

    def _register(self, call_id: str, connection: SipConnection) -> None:
        self._connections[call_id] = connection
        connection.start()
        self._spawn(self._forget_when_ended(call_id, connection), f"watch {call_id}")

    async def _forget_when_ended(self, call_id: str, connection: SipConnection) -> None:
        await connection.wait_closed()
        self._connections.pop(call_id, None)
        self._cancelled_inbound.discard(call_id)
        if not self._accepting and not self._connections:
            # The last BYEs get their answer (or a few retransmissions) before the socket goes.
            byes = [t for t in self._tasks if t.get_name().startswith(("bye ", "cancel "))]
            if byes:
                await asyncio.wait(byes, timeout=BYE_LINGER_SECONDS)
            if not self._accepting and not self._connections:
                await self._close_transport()

    def _reserve_rtp_port(self) -> tuple[int, list[socket.socket]]:
        """An even RTP port with its RTCP neighbour, held by bound sockets until the session
        binds them (the SDP must name the port before the far end has answered)."""
        first, last = self._rtp_ports
        first += first % 2
        span = (last - first) // 2
        host = self.listen_address[0]
        for step in range(span):
            port = first + ((self._next_rtp_port - first) // 2 + step) % span * 2
            held: list[socket.socket] = []
            try:
                for candidate in (port, port + 1):
                    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    held.append(sock)
                    sock.bind((host, candidate))
            except OSError:
                release(held)
                continue
            self._next_rtp_port = port + 2
            return port, held
        raise DialFailed("failed", f"no free RTP port in {first}-{last}")

    async def _open_rtp(
        self,
        port: int,
        reservation: list[socket.socket],
        remote: tuple[str, int],
        payload_type: int,
        telephone_events: int | None,
    ) -> RTPSession:
        release(reservation)
        return await RTPSession.create(
            local_addr=(self.listen_address[0], port),
            remote_addr=remote,
            payload_type=payload_type,
            dtmf_payload_type=telephone_events or DEFAULT_TELEPHONE_EVENTS,
            # Follow the address the far end really sends from (NAT, SBCs), not just its SDP.
            symmetric_rtp=True,
        )


def build_adapter(settings: Settings) -> SipAdapter:
    """The engine's entry point for ``CALLPLANE_TELEPHONY=sip``."""
    return SipAdapter.from_settings(settings)
