"""A browser stand-in for web call tests that need no page: an aiortc peer that offers audio
(and the data channel callplane-web.js opens), plays PCM into the call and keeps what the
server sends on the data channel."""

from __future__ import annotations

import asyncio
import fractions
import json
from typing import Any

import av
from aiortc import MediaStreamTrack, RTCConfiguration, RTCPeerConnection, RTCSessionDescription

RATE = 48000
FRAME = 960


class PcmTrack(MediaStreamTrack):
    """``pcm`` (48 kHz mono s16), then silence for ever, paced in real time."""

    kind = "audio"

    def __init__(self, pcm: bytes = b"") -> None:
        super().__init__()
        self._pcm = pcm
        self._sent = 0
        self._start: float | None = None

    async def recv(self) -> av.AudioFrame:
        loop = asyncio.get_running_loop()
        if self._start is None:
            self._start = loop.time()
        else:
            await asyncio.sleep(max(0.0, self._start + self._sent * 0.02 - loop.time()))
        chunk = self._pcm[self._sent * FRAME * 2 : (self._sent + 1) * FRAME * 2]
        frame = av.AudioFrame(format="s16", layout="mono", samples=FRAME)
        frame.planes[0].update(chunk.ljust(FRAME * 2, b"\0"))
        frame.sample_rate = RATE
        frame.pts = self._sent * FRAME
        frame.time_base = fractions.Fraction(1, RATE)
        self._sent += 1
        return frame


class Peer:
    def __init__(self, pcm: bytes = b"", *, audio: bool = True) -> None:
        # No ICE servers: nothing outside this machine is contacted.
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self.messages: list[dict[str, Any]] = []
        self.channel = self.pc.createDataChannel("callplane")
        self.channel.on("message", lambda m: self.messages.append(json.loads(m)))
        if audio:
            self.pc.addTrack(PcmTrack(pcm))
        self.connected = asyncio.Event()
        self.opened = asyncio.Event()
        self.channel.on("open", self.opened.set)

        @self.pc.on("connectionstatechange")
        def changed() -> None:
            if self.pc.connectionState == "connected":
                self.connected.set()

    async def offer(self) -> str:
        await self.pc.setLocalDescription(await self.pc.createOffer())
        return str(self.pc.localDescription.sdp)

    async def accept(self, answer: str) -> None:
        await self.pc.setRemoteDescription(RTCSessionDescription(answer, "answer"))

    async def close(self) -> None:
        await self.pc.close()
