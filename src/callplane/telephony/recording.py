"""Both sides of a call on one wall clock, written out as a two-channel WAV.

Channel 0 is what the agent sent, channel 1 what the far end sent
(docs/api-contract.md#external-calls: a stereo file gives one channel per side, so the ingestion
pipeline can tell the speakers apart).

Each side is a byte track of telephone-band PCM. The sender appends one 20 ms frame per tick
(speech or silence), so the agent's track *is* the call's clock; the far end's track is padded
with silence whenever it falls behind by more than a little jitter allowance, so a far end that
stops sending RTP (on hold, muted, a broken path) stays aligned instead of sliding earlier.
"""

from __future__ import annotations

import io
import wave

from callplane.telephony.base import FRAME_BYTES, SAMPLE_RATE, SAMPLE_WIDTH, Recording

#: How far the far end's track may lag the agent's before silence is inserted: its RTP arrives
#: through a jitter buffer that holds a few frames back, and a busy machine reads the socket
#: late. Too small, and audio merely late is preceded by invented silence (a false pause).
JITTER_ALLOWANCE_BYTES = 15 * FRAME_BYTES


class CallRecorder:
    def __init__(self) -> None:
        self._sent = bytearray()
        self._heard = bytearray()

    def sent(self, pcm: bytes) -> bytes:
        """Record the agent's frame; returns the silence added to the far end's track to keep it
        on the clock (empty when its audio is arriving), which the listener should hear too."""
        self._sent += pcm
        behind = len(self._sent) - len(self._heard) - JITTER_ALLOWANCE_BYTES
        if behind <= 0:
            return b""
        gap = bytes(behind - behind % SAMPLE_WIDTH)
        self._heard += gap
        return gap

    def heard(self, pcm: bytes) -> None:
        self._heard += pcm

    @property
    def duration_seconds(self) -> float:
        return len(self._sent) / (SAMPLE_RATE * SAMPLE_WIDTH)

    def recording(self) -> Recording | None:
        if not self._sent:
            return None
        length = max(len(self._sent), len(self._heard))
        agent = bytes(self._sent).ljust(length, b"\0")
        far_end = bytes(self._heard).ljust(length, b"\0")
        return Recording(
            content_type="audio/wav",
            data=stereo_wav(agent, far_end),
            duration_seconds=length / (SAMPLE_RATE * SAMPLE_WIDTH),
        )


def stereo_wav(left: bytes, right: bytes) -> bytes:
    """Interleave two equally long 16-bit mono tracks into a WAV file."""
    frames = bytearray(len(left) * 2)
    for channel, track in enumerate((left, right)):
        view = memoryview(track).cast("H")
        out = memoryview(frames).cast("H")
        out[channel::2] = view
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(2)
        wav.setsampwidth(SAMPLE_WIDTH)
        wav.setframerate(SAMPLE_RATE)
        wav.writeframes(bytes(frames))
    return buffer.getvalue()
