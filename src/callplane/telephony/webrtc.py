"""Web calls: a browser's WebRTC offer in, an answer out, and the call as a ``Connection``.

aiortc (BSD) holds the peer connection. Media is Opus at 48 kHz on the wire; the engine hears
and speaks the telephone band of ``telephony.base`` (8 kHz frames), so both directions go
through libswresample (PyAV's ``AudioResampler``, band-limited, not sample dropping). What the
recogniser gets is resampled from the wire to 16 kHz instead (``recognition_audio``).

ICE uses only the servers of CALLPLANE_ICE_SERVERS. aiortc falls back to a public STUN server
when given none at all, so the configuration always names its list, empty by default: the
answer then carries host candidates only and nothing outside is ever contacted.

A call ends when the browser closes the connection or its track, when it never connects
(``connect_seconds``), when neither side made a sound for ``silence_seconds`` (a forgotten tab's
open microphone), or when the engine hangs up. The browser may open a data channel; the
connection sends JSON messages on it (``send``: the live transcript).
"""

from __future__ import annotations

import asyncio
import contextlib
import fractions
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

import av
import numpy as np
from aiortc import (
    MediaStreamTrack,
    RTCConfiguration,
    RTCIceServer,
    RTCPeerConnection,
    RTCSessionDescription,
)
from aiortc.mediastreams import MediaStreamError
from aiortc.rtcdatachannel import RTCDataChannel
from aiortc.sdp import SessionDescription

from callplane.telephony.audio_line import AudioLine
from callplane.telephony.base import (
    FRAME_BYTES,
    FRAME_MS,
    SAMPLE_RATE,
    Connection,
    DialFailed,
    DialRequest,
    EndedBy,
    InboundRouter,
    Recording,
    TelephonyAdapter,
)
from callplane.telephony.recording import CallRecorder

log = logging.getLogger("callplane.telephony.webrtc")

WIRE_RATE = 48000
#: What the recogniser hears (Whisper's own rate), and how much of it a call keeps: more than
#: the longest turn the listener cuts (30 s).
WIDEBAND_RATE = 16000
WIDEBAND_KEEP_SECONDS = 45
WIRE_FRAME_SAMPLES = WIRE_RATE * FRAME_MS // 1000
#: An offer of a browser is a few kilobytes; anything much larger is not one.
MAX_OFFER_CHARS = 32_768
#: A page offers its microphone and a data channel; a few more sections are tolerated.
MAX_MEDIA_SECTIONS = 8
#: A browser offers a handful of candidates (one or two per interface and transport).
MAX_CANDIDATES = 32
#: RMS above which a 20 ms frame counts as sound for the silence timeout (about -40 dBFS: a
#: fake or muted microphone sends zeros, a quiet room a few tens).
SOUND_RMS = 300.0
#: The page only ever says a few words on the data channel ({"type": "hangup"}).
MAX_PAGE_MESSAGE_CHARS = 1024
#: How long the last data channel message is given to leave before the connection closes.
CLOSE_FLUSH_SECONDS = 0.2


class BadOffer(ValueError):
    """The SDP is not a WebRTC offer this server can answer (the message says why)."""


@dataclass(frozen=True)
class IceServer:
    urls: list[str]
    username: str | None = None
    credential: str | None = None


def parse_ice_servers(setting: str) -> list[IceServer]:
    """CALLPLANE_ICE_SERVERS: comma-separated ``stun:``/``turn:`` URLs, or a JSON list of
    ``{"urls", "username", "credential"}``; empty: none."""
    setting = setting.strip()
    if not setting:
        return []
    if setting.startswith("["):
        servers = []
        for item in json.loads(setting):
            urls = item["urls"]
            servers.append(
                IceServer(
                    [urls] if isinstance(urls, str) else list(urls),
                    item.get("username"),
                    item.get("credential"),
                )
            )
        return servers
    return [IceServer([url.strip()]) for url in setting.split(",") if url.strip()]


def check_offer(sdp: str) -> None:
    """Refuse what is not an offer with audio before any peer connection is made."""
    if len(sdp) > MAX_OFFER_CHARS:
        raise BadOffer(f"sdp is longer than {MAX_OFFER_CHARS} characters")
    try:
        parsed = SessionDescription.parse(sdp)
    except Exception:
        raise BadOffer("sdp is not a valid session description") from None
    if not parsed.media:
        raise BadOffer("sdp offers no media")
    if len(parsed.media) > MAX_MEDIA_SECTIONS:
        # Each section costs a transceiver and its transports before anything is refused.
        raise BadOffer(f"sdp offers more than {MAX_MEDIA_SECTIONS} media sections")
    if sum(len(m.ice_candidates) for m in parsed.media) > MAX_CANDIDATES:
        # Every candidate is an address our connectivity checks will send packets to.
        raise BadOffer(f"sdp offers more than {MAX_CANDIDATES} ICE candidates")
    if not any(m.kind == "audio" and m.port != 0 for m in parsed.media):
        raise BadOffer("sdp offers no audio")


class WebRtcConnection(AudioLine):
    """One answered web call (``media`` is audio, telephone band, as the engine expects)."""

    carrier = "a web call"

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __init__(self, pc: RTCPeerConnection, *, call_ref: str) -> None:
        super().__init__(media="audio", answered_by="human")
        self.call_ref = call_ref
        self.answer_sdp = ""
        self._pc = pc
        self._open_line()
        self._connected = asyncio.Event()
        self._recorder = CallRecorder()
        self._tasks: set[asyncio.Task[None]] = set()
        self._channel: RTCDataChannel | None = None
        self._last_sound = time.monotonic()
        self._from_wire = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
        # The same audio at the recogniser's rate, kept for the last turns (see
        # ``recognition_audio``): byte n of the narrow track is byte 2n of the wide one.
        self._to_wideband = av.AudioResampler(format="s16", layout="mono", rate=WIDEBAND_RATE)
        self._narrow = bytearray()
        self._wide = bytearray()
        self._to_wire = av.AudioResampler(format="s16", layout="mono", rate=WIRE_RATE)
        self._wire_out = bytearray()
        self._wire_pts = 0
        self.track = _AgentTrack(self)

    # -- setting up ------------------------------------------------------------------------

    async def answer(self, offer: str) -> str:
        """Take the browser's offer and return our answer (raises ``BadOffer``)."""
        pc = self._pc

        @pc.on("track")
        def on_track(track: MediaStreamTrack) -> None:
            if track.kind == "audio":
                self._spawn(self._hear(track), "hear")

        @pc.on("datachannel")
        def on_datachannel(channel: RTCDataChannel) -> None:
            self._channel = channel

            @channel.on("message")
            def on_message(message: object) -> None:
                if _message_type(message) == "hangup":
                    self._spawn(self.end("remote"), "remote hangup")

        @pc.on("connectionstatechange")
        async def on_state() -> None:
            state = pc.connectionState
            if state == "connected":
                self._connected.set()
                self._last_sound = time.monotonic()
            elif state in ("failed", "closed"):
                await self.end("remote")

        try:
            await pc.setRemoteDescription(RTCSessionDescription(offer, "offer"))
            audio = [t for t in pc.getTransceivers() if t.kind == "audio"]
            if not audio:
                raise BadOffer("sdp offers no audio")
            audio[0].sender.replaceTrack(self.track)
            audio[0].direction = "sendrecv"
            await pc.setLocalDescription(await pc.createAnswer())
        except BadOffer:
            raise
        except Exception as exc:
            log.info("web call %s: offer refused (%s: %s)", self.call_ref, type(exc).__name__, exc)
            raise BadOffer("sdp is not a WebRTC offer this server can answer") from None
        self.answer_sdp = pc.localDescription.sdp
        return self.answer_sdp

    def start(self, *, connect_seconds: float, silence_seconds: float) -> None:
        """Begin watching the call (after the answer is sent)."""
        self._spawn(self._watch(connect_seconds, silence_seconds), "watch")

    def _spawn(self, work: Any, name: str) -> None:
        task = asyncio.get_running_loop().create_task(work, name=f"webrtc {name} {self.call_ref}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _watch(self, connect_seconds: float, silence_seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(connect_seconds):
                await self._connected.wait()
        if not self._connected.is_set():
            log.info("web call %s: the browser never connected", self.call_ref)
            await self.end("remote")
            return
        while not self._ended.is_set():
            if self._outgoing:  # the agent is speaking
                self._last_sound = time.monotonic()
            quiet = time.monotonic() - self._last_sound
            if quiet >= silence_seconds:
                log.info("web call %s: silent for %.0f s; hanging up", self.call_ref, quiet)
                await self.hangup()
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(0.5, silence_seconds - quiet)):
                    await self._ended.wait()

    # -- browser -> agent -----------------------------------------------------------------

    async def _hear(self, track: MediaStreamTrack) -> None:
        try:
            while not self._ended.is_set():
                frame = await track.recv()
                assert isinstance(frame, av.AudioFrame)
                for wide in self._to_wideband.resample(frame):
                    self._wide += _pcm(wide)
                for narrow in self._from_wire.resample(frame):
                    self._heard(_pcm(narrow))
        except MediaStreamError:
            await self.end("remote")
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("web call %s: receiving audio failed", self.call_ref)
            await self.hangup()

    def _heard(self, pcm: bytes) -> None:
        if self._ended.is_set() or not pcm:
            return
        samples = np.frombuffer(pcm, dtype=np.int16).astype(np.float64)
        if float(np.sqrt(np.mean(samples * samples))) > SOUND_RMS:
            self._last_sound = time.monotonic()
        self._recorder.heard(pcm)
        self._narrow += pcm
        self._deliver(pcm)

    def _kept_silence(self, narrow_bytes: int) -> None:
        """Silence the listener hears (the browser fell behind): in both kept tracks too."""
        self._narrow += bytes(narrow_bytes)
        self._wide += bytes(2 * narrow_bytes)

    def recognition_audio(self, pcm: bytes) -> tuple[bytes, int]:
        """The 16 kHz audio of a stretch the listener heard at 8 kHz, for the recogniser: the
        browser sends wideband speech, and the telephone band would throw half of it away.
        A stretch not found as heard (the listener filled a gap itself) stays as it is."""
        excess = len(self._narrow) - WIDEBAND_KEEP_SECONDS * SAMPLE_RATE * 2
        if excess > 0:
            excess -= excess % 2
            del self._narrow[:excess]
            del self._wide[: 2 * excess]
        at = self._narrow.rfind(pcm) if pcm else -1
        if at < 0 or at % 2:
            return pcm, SAMPLE_RATE
        wide = bytes(self._wide[2 * at : 2 * (at + len(pcm))])
        if len(wide) < 2 * len(pcm) - WIDEBAND_RATE // 10:  # the wide track is behind: keep
            return pcm, SAMPLE_RATE
        return wide, WIDEBAND_RATE

    # -- agent -> browser -----------------------------------------------------------------

    def next_wire_frame(self) -> av.AudioFrame:
        """The next 20 ms toward the browser at 48 kHz (silence when the agent is quiet); what
        was sent is recorded, in the telephone band, on the recording's agent channel."""
        while len(self._wire_out) < WIRE_FRAME_SAMPLES * 2:
            if self._outgoing:
                pcm = bytes(self._outgoing[:FRAME_BYTES]).ljust(FRAME_BYTES, b"\0")
                del self._outgoing[:FRAME_BYTES]
            else:
                pcm = bytes(FRAME_BYTES)
            gap = self._recorder.sent(pcm)
            if gap:
                self._kept_silence(len(gap))
                self._deliver(gap)
            for wide in self._to_wire.resample(_frame(pcm, SAMPLE_RATE)):
                self._wire_out += _pcm(wide)
        frame = _frame(bytes(self._wire_out[: WIRE_FRAME_SAMPLES * 2]), WIRE_RATE)
        del self._wire_out[: WIRE_FRAME_SAMPLES * 2]
        frame.pts = self._wire_pts
        frame.time_base = fractions.Fraction(1, WIRE_RATE)
        self._wire_pts += WIRE_FRAME_SAMPLES
        return frame

    # -- the data channel -----------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        """A JSON message to the browser, if it opened a data channel (else dropped)."""
        channel = self._channel
        if channel is None or channel.readyState != "open" or self._ended.is_set():
            return
        with contextlib.suppress(Exception):
            channel.send(json.dumps(message))

    # -- ending ---------------------------------------------------------------------------

    async def hangup(self) -> None:
        await self.end("local")

    async def end(self, ended_by: EndedBy) -> None:
        if self._ended.is_set():
            return
        self.ended_by = ended_by
        self._ended.set()
        self._incoming_ready.set()
        self.track.stop()
        if self._channel is not None and self._channel.readyState == "open":
            # The page learns at once that the call is over (a closed peer connection is only
            # noticed by the browser after its consent checks fail, seconds later).
            with contextlib.suppress(Exception):
                self._channel.send(json.dumps({"type": "ended", "by": ended_by}))
                await asyncio.sleep(CLOSE_FLUSH_SECONDS)
        current = asyncio.current_task()
        for task in list(self._tasks):
            if task is not current:
                task.cancel()
        with contextlib.suppress(Exception):
            await self._pc.close()
        log.info(
            "web call %s: ended by %s after %.1f s",
            self.call_ref,
            ended_by,
            self._recorder.duration_seconds,
            extra={"call_ref": self.call_ref},
        )

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    async def wait_ended(self) -> EndedBy:
        await self._ended.wait()
        assert self.ended_by is not None
        return self.ended_by

    async def recording(self) -> Recording | None:
        return self._recorder.recording()


class _AgentTrack(MediaStreamTrack):
    """The agent's audio as aiortc pulls it: one 20 ms frame per ``recv``, paced in real time."""

    kind = "audio"

    def __init__(self, connection: WebRtcConnection) -> None:
        super().__init__()
        self._connection = connection
        self._start: float | None = None
        self._sent = 0

    async def recv(self) -> av.AudioFrame:
        if self.readyState != "live":
            raise MediaStreamError
        loop = asyncio.get_running_loop()
        if self._start is None:
            self._start = loop.time()
        else:
            self._sent += 1
            wait = self._start + self._sent * FRAME_MS / 1000 - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
        return self._connection.next_wire_frame()


def _message_type(message: object) -> str | None:
    """The ``type`` of a JSON object message from the page (anything else: None)."""
    if not isinstance(message, str) or len(message) > MAX_PAGE_MESSAGE_CHARS:
        return None
    try:
        parsed = json.loads(message)
    except ValueError:
        return None
    kind = parsed.get("type") if isinstance(parsed, dict) else None
    return kind if isinstance(kind, str) else None


def _frame(pcm: bytes, rate: int) -> av.AudioFrame:
    frame = av.AudioFrame(format="s16", layout="mono", samples=len(pcm) // 2)
    frame.planes[0].update(pcm)
    frame.sample_rate = rate
    return frame


def _pcm(frame: av.AudioFrame) -> bytes:
    return bytes(frame.planes[0])[: frame.samples * 2]


def peer_connection(servers: list[IceServer]) -> RTCPeerConnection:
    """A peer connection that contacts exactly ``servers`` (an empty list: none at all)."""
    ice = [RTCIceServer(s.urls, username=s.username, credential=s.credential) for s in servers]
    return RTCPeerConnection(RTCConfiguration(iceServers=ice))


async def answer_offer(offer: str, servers: list[IceServer], *, call_ref: str) -> WebRtcConnection:
    """A connection answering ``offer`` (its ``answer_sdp`` is set); raises ``BadOffer``."""
    check_offer(offer)
    connection = WebRtcConnection(peer_connection(servers), call_ref=call_ref)
    try:
        await connection.answer(offer)
    except BaseException:
        await connection.end("local")
        raise
    return connection


class WebRtcTelephony(TelephonyAdapter):
    """The network of web calls: nothing is dialled and nothing rings in; a call arrives as
    an HTTP request (``engine.web``), which answers its offer with ``answer_offer``."""

    async def start(self, route_inbound: InboundRouter) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def dial(self, request: DialRequest) -> Connection:
        raise DialFailed("failed", "web calls are started by the browser, never dialled")
