"""One answered SIP call's audio: RTP both ways, paced at 20 ms, recorded.

The sender ticks every 20 ms for the whole call and always sends a frame, silence when the
agent has nothing queued: a steady RTP stream is what trunks expect (some hang up on a silent
leg), and it makes the agent's side of the recording the call's clock.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from aiortp import RTPSession

from callplane.telephony.base import (
    FRAME_BYTES,
    FRAME_MS,
    SAMPLE_RATE,
    AudioFrame,
    Connection,
    EndedBy,
    Frame,
    Recording,
    TransferOutcome,
    TransferTarget,
)
from callplane.telephony.recording import CallRecorder

logger = logging.getLogger("callplane.telephony.sip")

SILENCE = bytes(FRAME_BYTES)
#: A consumer that stops reading the far end's audio must not grow memory without bound:
#: beyond this many frames (30 s) the oldest are dropped.
MAX_QUEUED_FRAMES = 1500
#: When the event loop stalls, the sender catches up by at most this many frames at once and
#: skips the rest of the gap (a burst of late audio is worse than a short hole).
MAX_CATCH_UP_FRAMES = 5
#: A keypress sent as telephone-events (``send_dtmf``): the tone's length, then silence.
DTMF_TONE_MS, DTMF_GAP_MS = 160, 80


class SipConnection(Connection):
    """A ``Connection`` over one RTP session; signalling stays with the adapter."""

    # Two calls are never equal because their fields match (the base is a dataclass).
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __init__(
        self,
        rtp: RTPSession,
        *,
        call_ref: str,
        send_bye: Callable[[], Awaitable[None]],
        refer: Callable[[TransferTarget], Awaitable[TransferOutcome]] | None = None,
    ) -> None:
        super().__init__(media="audio")
        #: Cold transfer on the call's dialog (``sip_transfer``); None: not possible here.
        self._refer = refer
        self.call_ref = call_ref
        self._rtp = rtp
        self._send_bye = send_bye
        self._outgoing = bytearray()
        self._incoming: collections.deque[AudioFrame] = collections.deque()
        self._incoming_ready = asyncio.Event()
        self._partial = b""
        self._ended = asyncio.Event()
        self._recorder = CallRecorder()
        self._sender: asyncio.Task[None] | None = None
        rtp.on_audio = self._on_audio

    def start(self) -> None:
        self._sender = asyncio.get_running_loop().create_task(
            self._send_loop(), name=f"rtp-send {self.call_ref}"
        )

    # -- far end -> agent -----------------------------------------------------------------

    def _on_audio(self, pcm: bytes, _timestamp: int) -> None:
        if self._ended.is_set():
            return
        self._recorder.heard(pcm)
        self._deliver(pcm)

    def _deliver(self, pcm: bytes) -> None:
        data = self._partial + pcm
        whole = len(data) - len(data) % FRAME_BYTES
        self._partial = data[whole:]
        for offset in range(0, whole, FRAME_BYTES):
            if len(self._incoming) >= MAX_QUEUED_FRAMES:
                self._incoming.popleft()
            self._incoming.append(AudioFrame(data[offset : offset + FRAME_BYTES]))
        self._incoming_ready.set()

    async def frames(self) -> AsyncIterator[Frame]:
        """A steady 50 frames a second while the call lasts: when the far end sends no RTP
        (silence suppression, a hold, a broken path) the gap is delivered as silence, so
        listeners that wait for a pause (end of turn, who answered) see one."""
        while True:
            while self._incoming:
                yield self._incoming.popleft()
            if self._ended.is_set():
                return
            self._incoming_ready.clear()
            await self._incoming_ready.wait()

    # -- agent -> far end -----------------------------------------------------------------

    async def play(self, frame: Frame) -> None:
        if not isinstance(frame, AudioFrame):
            raise TypeError("a SIP call carries audio frames only")
        if not self._ended.is_set():
            self._outgoing += frame.pcm

    async def interrupt(self) -> None:
        self._outgoing.clear()

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

    def queued_seconds(self) -> float:
        """Audio given to ``play`` and not yet sent (lets callers await the end of a line)."""
        return len(self._outgoing) / (FRAME_BYTES * 1000 / FRAME_MS)

    # -- ending ---------------------------------------------------------------------------

    async def hangup(self) -> None:
        if self._ended.is_set():
            return
        await self.end("local")
        await self._send_bye()

    async def end(self, ended_by: EndedBy) -> None:
        """Stop the media (idempotent); the adapter calls it when the far end hangs up."""
        if self._ended.is_set():
            return
        self.ended_by = ended_by
        self._ended.set()
        self._incoming_ready.set()
        if self._sender is not None and self._sender is not asyncio.current_task():
            self._sender.cancel()
        await self._rtp.close()
        logger.info(
            "call %s: ended by %s after %.1f s",
            self.call_ref,
            ended_by,
            self._recorder.duration_seconds,
            extra={"call_ref": self.call_ref},
        )

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    async def send_dtmf(self, digits: str) -> None:
        """RFC 4733 telephone-events (payload type 101) on the call's RTP stream, a 160 ms
        event per key with a pause between, each at its own timestamp."""
        for digit in digits:
            if self._ended.is_set():
                return
            timestamp = int(time.monotonic() * SAMPLE_RATE) & 0xFFFFFFFF
            self._rtp.send_dtmf(digit, duration_ms=DTMF_TONE_MS, timestamp=timestamp)
            await asyncio.sleep((DTMF_TONE_MS + DTMF_GAP_MS) / 1000)

    async def transfer(self, target: TransferTarget) -> TransferOutcome:
        if self._refer is None or target.mode != "cold":
            return await super().transfer(target)
        return await self._refer(target)

    async def wait_ended(self) -> EndedBy:
        await self._ended.wait()
        assert self.ended_by is not None
        return self.ended_by

    async def recording(self) -> Recording | None:
        return self._recorder.recording()
