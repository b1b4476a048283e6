"""One answered SIP call's audio: RTP both ways, paced at 20 ms, recorded.

The sender ticks every 20 ms for the whole call and always sends a frame, silence when the
agent has nothing queued: a steady RTP stream is what trunks expect (some hang up on a silent
leg), and it makes the agent's side of the recording the call's clock.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from aiortp import RTPSession

from callplane.observability.metrics import count_rtp_stats
from callplane.telephony.audio_line import AudioLine
from callplane.telephony.base import (
    FRAME_BYTES,
    FRAME_MS,
    SAMPLE_RATE,
    Brief,
    EndedBy,
    Recording,
    TelephonyFeatureMissing,
    TransferOutcome,
    TransferTarget,
)
from callplane.telephony.bridge import warm_transfer
from callplane.telephony.recording import CallRecorder

logger = logging.getLogger("callplane.telephony.sip")

SILENCE = bytes(FRAME_BYTES)
#: When the event loop stalls, the sender catches up by at most this many frames at once and
#: skips the rest of the gap (a burst of late audio is worse than a short hole).
MAX_CATCH_UP_FRAMES = 5
#: A keypress sent as telephone-events (``send_dtmf``): the tone's length, then silence.
DTMF_TONE_MS, DTMF_GAP_MS = 160, 80


class SipConnection(AudioLine):
    """A ``Connection`` over one RTP session; signalling stays with the adapter."""

    carrier = "a SIP call"

    # Two calls are never equal because their fields match (the base is a dataclass).
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __init__(
        self,
        rtp: RTPSession,
        *,
        call_ref: str,
        send_bye: Callable[[], Awaitable[None]],
        telephone_events: int | None = None,
        media_timeout_seconds: float | None = None,
        refer: Callable[[TransferTarget], Awaitable[TransferOutcome]] | None = None,
        dial_leg: Callable[[TransferTarget], Awaitable[tuple[AudioLine, str]]] | None = None,
    ) -> None:
        super().__init__(media="audio")
        #: Cold transfer on the call's dialog (``sip_transfer``); None: not possible here.
        self._refer = refer
        #: A warm transfer's second leg (the adapter's dial): the person's connection and its
        #: SIP Call-ID; None: not possible here.
        self._dial_leg = dial_leg
        self.call_ref = call_ref
        self._rtp = rtp
        #: The payload type the far end's SDP gives telephone-events; None: it named none.
        self._telephone_events = telephone_events
        self._send_bye = send_bye
        self._open_line()
        self._recorder = CallRecorder()
        self._sender: asyncio.Task[None] | None = None
        self._media_timeout = media_timeout_seconds
        self._watchdog: asyncio.Task[None] | None = None
        self._last_heard = 0.0
        # Set once the call is over *and* our BYE, if any, is on its way (see wait_closed).
        self._closed = asyncio.Event()
        self._saying_bye = False
        rtp.on_audio = self._on_audio

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._last_heard = loop.time()
        self._sender = loop.create_task(self._send_loop(), name=f"rtp-send {self.call_ref}")
        if self._media_timeout is not None:
            self._watchdog = loop.create_task(
                self._watch_media(self._media_timeout), name=f"rtp-watch {self.call_ref}"
            )

    async def _watch_media(self, limit: float) -> None:
        """A far end that vanished without a BYE sends no more RTP: end the call after
        ``limit`` seconds of silence on the wire (CALLPLANE_MEDIA_TIMEOUT_SECONDS)."""
        loop = asyncio.get_running_loop()
        while not self._ended.is_set():
            quiet = loop.time() - self._last_heard
            if quiet >= limit:
                break
            await asyncio.sleep(min(limit - quiet + 0.01, 1.0))
        else:
            return
        self.end_reason = f"no audio from the far end for {limit:g} s"
        logger.info(
            "call %s: %s; hanging up",
            self.call_ref,
            self.end_reason,
            extra={"call_ref": self.call_ref},
        )
        self._saying_bye = True
        try:
            await self.end("remote")
            await self._send_bye()
        finally:
            self._closed.set()

    # -- far end -> agent -----------------------------------------------------------------

    def _on_audio(self, pcm: bytes, _timestamp: int) -> None:
        if self._ended.is_set():
            return
        self._last_heard = asyncio.get_running_loop().time()
        self._recorder.heard(pcm)
        self._deliver(pcm)

    # -- agent -> far end -----------------------------------------------------------------

    async def _send_loop(self) -> None:
        loop = asyncio.get_running_loop()
        period = FRAME_MS / 1000
        deadline = loop.time()
        try:
            while not self._ended.is_set():
                due = int((loop.time() - deadline) / period) + 1
                if due > MAX_CATCH_UP_FRAMES:
                    skipped = due - MAX_CATCH_UP_FRAMES
                    deadline += skipped * period
                    due = MAX_CATCH_UP_FRAMES
                    # Not sent, but the time passed: the recording stays on the wall clock.
                    self._keep_time(skipped * FRAME_BYTES)
                for _ in range(due):
                    self._send_frame()
                deadline += due * period
                await asyncio.sleep(max(0.0, deadline - loop.time()))
        except Exception:
            # The media of one call failing must end that call, never the worker.
            logger.exception("call %s: RTP sender failed", self.call_ref)
            await self.hangup()

    def _keep_time(self, silence_bytes: int) -> None:
        gap = self._recorder.sent(bytes(silence_bytes))
        if gap:
            self._deliver(gap)

    def _send_frame(self) -> None:
        if self._outgoing:
            pcm = bytes(self._outgoing[:FRAME_BYTES]).ljust(FRAME_BYTES, b"\0")
            del self._outgoing[:FRAME_BYTES]
        else:
            pcm = SILENCE
        self._rtp.send_audio_pcm_auto(pcm)
        gap = self._recorder.sent(pcm)
        if gap:
            self._deliver(gap)

    # -- ending ---------------------------------------------------------------------------

    async def hangup(self) -> None:
        if self._ended.is_set():
            return
        self._saying_bye = True
        try:
            await self.end("local")
            await self._send_bye()
        finally:
            self._closed.set()

    async def end(self, ended_by: EndedBy) -> None:
        """Stop the media (idempotent); the adapter calls it when the far end hangs up."""
        if self._ended.is_set():
            return
        self.ended_by = ended_by
        self._ended.set()
        self._incoming_ready.set()
        for task in (self._sender, self._watchdog):
            if task is not None and task is not asyncio.current_task():
                task.cancel()
        count_rtp_stats(self._rtp.stats)  # issue 29
        await self._rtp.close()
        logger.info(
            "call %s: ended by %s after %.1f s",
            self.call_ref,
            ended_by,
            self._recorder.duration_seconds,
            extra={"call_ref": self.call_ref},
        )
        if not self._saying_bye:
            self._closed.set()

    async def wait_closed(self) -> None:
        """Return once the call is over and its signalling done with (the adapter keeps its
        socket open until then, also when stopping)."""
        await self._closed.wait()

    async def send_dtmf(self, digits: str) -> None:
        """RFC 4733 telephone-events (payload type 101) on the call's RTP stream, a 160 ms
        event per key with a pause between, each at its own timestamp; only when the far end's
        SDP named telephone-events (its phone would take anything else for noise)."""
        if self._telephone_events is None:
            raise TelephonyFeatureMissing("the other party's phone does not take keypresses")
        for digit in digits:
            if self._ended.is_set():
                return
            timestamp = int(time.monotonic() * SAMPLE_RATE) & 0xFFFFFFFF
            self._rtp.send_dtmf(digit, duration_ms=DTMF_TONE_MS, timestamp=timestamp)
            await asyncio.sleep((DTMF_TONE_MS + DTMF_GAP_MS) / 1000)

    async def transfer(self, target: TransferTarget, brief: Brief | None = None) -> TransferOutcome:
        dial_leg = self._dial_leg
        if target.mode == "warm" and dial_leg is not None:
            return await warm_transfer(self, lambda: dial_leg(target), brief)
        if target.mode == "cold" and self._refer is not None:
            return await self._refer(target)
        return await super().transfer(target, brief)

    async def wait_ended(self) -> EndedBy:
        await self._ended.wait()
        assert self.ended_by is not None
        return self.ended_by

    async def recording(self) -> Recording | None:
        return self._recorder.recording()
