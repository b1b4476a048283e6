"""The audio half every real-time connection shares (SIP's RTP, a browser's WebRTC): the far
end's audio cut into 20 ms frames for the engine, and the agent's audio queued until the
connection's own clock sends it.

Two lines can be joined (``join``, a warm transfer's bridge: ``telephony/bridge.py``): each
one's far-end audio then goes straight out of the other, and the engine neither hears the far
end nor is heard by it (its frames stop coming, what it plays is dropped) until they are parted.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator

from callplane.telephony.base import FRAME_BYTES, FRAME_MS, AudioFrame, Connection, Frame

#: A consumer that stops reading the far end's audio must not grow memory without bound:
#: beyond this many frames (30 s) the oldest are dropped.
MAX_QUEUED_FRAMES = 1500
#: Audio relayed from a joined line waits at most this long to be sent: the two clocks drift
#: and RTP arrives in bursts, and a bridge whose delay kept growing would become unusable.
MAX_RELAY_BACKLOG_BYTES = 15 * FRAME_BYTES


class AudioLine(Connection):
    """``frames``, ``play``, ``interrupt`` and ``queued_seconds`` over two buffers; a subclass
    feeds the far end's audio to ``_deliver`` and takes the agent's from ``_outgoing``."""

    #: Says what kind of call refuses a frame that is not audio.
    carrier = "this call"

    def _open_line(self) -> None:
        self._outgoing = bytearray()
        self._incoming: collections.deque[AudioFrame] = collections.deque()
        self._incoming_ready = asyncio.Event()
        self._partial = b""
        self._ended = asyncio.Event()
        self._joined: AudioLine | None = None

    def join(self, other: AudioLine | None) -> None:
        """Send the far end's audio out of ``other`` from now on (None: back to the engine)."""
        self._joined = other
        self._partial = b""

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    @property
    def handed_over(self) -> bool:
        return self._joined is not None and not self._ended.is_set()

    def _relay(self, pcm: bytes) -> None:
        """Audio from the joined line's far end, sent as it comes with a bounded delay."""
        if self._ended.is_set():
            return
        self._outgoing += pcm
        excess = len(self._outgoing) - MAX_RELAY_BACKLOG_BYTES
        if excess > 0:
            del self._outgoing[: excess + (-excess) % FRAME_BYTES]

    def _deliver(self, pcm: bytes) -> None:
        joined = self._joined
        if joined is not None:
            joined._relay(pcm)
            return
        data = self._partial + pcm
        whole = len(data) - len(data) % FRAME_BYTES
        self._partial = data[whole:]
        for offset in range(0, whole, FRAME_BYTES):
            if len(self._incoming) >= MAX_QUEUED_FRAMES:
                self._incoming.popleft()
            self._incoming.append(AudioFrame(data[offset : offset + FRAME_BYTES]))
        self._incoming_ready.set()

    async def frames(self) -> AsyncIterator[Frame]:
        """The far end's audio as it arrives. SIP delivers the gaps in the far end's RTP as
        silence too, so there it is a steady 50 frames a second and listeners that wait for a
        pause (end of turn, who answered) see one."""
        while True:
            while self._incoming:
                yield self._incoming.popleft()
            if self._ended.is_set():
                return
            self._incoming_ready.clear()
            await self._incoming_ready.wait()

    async def play(self, frame: Frame) -> None:
        if not isinstance(frame, AudioFrame):
            raise TypeError(f"{self.carrier} carries audio frames only")
        if not self._ended.is_set() and self._joined is None:
            self._outgoing += frame.pcm

    async def interrupt(self) -> None:
        if self._joined is None:  # what is queued is the other party's voice, not the agent's
            self._outgoing.clear()

    def queued_seconds(self) -> float:
        """Audio given to ``play`` and not yet sent (lets callers await the end of a line)."""
        return len(self._outgoing) / (FRAME_BYTES * 1000 / FRAME_MS)
