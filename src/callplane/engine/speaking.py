"""The agent's mouth: reply sentences in, media out, and a clock of what is still being heard.

Audio: each sentence is synthesised off the event loop and queued on the connection, which
plays it in real time; so the next sentence is synthesised while this one is heard. The
connection does not say when playback ends, so the speaker keeps the time it will (queued audio
duration from when it began) in the ``Reply``. Text: the reply's sentences are played as one
``TextFrame`` when the line ends (a simulated person answers each frame).

``interrupt`` (barge-in) drops whatever is queued; the reply keeps only the sentences the caller
heard the start of: that, not the whole generated reply, is what the transcript records.
"""

from __future__ import annotations

import asyncio
import logging
import time

from callplane.engine.reply import Reply
from callplane.speech import executors
from callplane.speech.base import Synthesizer
from callplane.telephony.base import (
    FRAME_BYTES,
    SAMPLE_RATE,
    SAMPLE_WIDTH,
    AudioFrame,
    Connection,
    TextFrame,
)

log = logging.getLogger("callplane.engine.speaking")


class Speaker:
    def __init__(self, connection: Connection, synthesizer: Synthesizer | None) -> None:
        self._connection = connection
        self._synthesizer = synthesizer
        self._pending_text: list[str] = []
        #: When everything queued on the connection, of any line, will have been heard.
        self._busy_until = 0.0

    @property
    def speaking(self) -> bool:
        return time.monotonic() < self._busy_until

    async def say(self, reply: Reply, sentence: str) -> None:
        if self._connection.media == "text":
            self._pending_text.append(sentence)
            return
        pcm = b""
        if self._synthesizer is not None:
            try:
                pcm = await executors.run(
                    "synthesis", self._synthesizer.synthesize, sentence, SAMPLE_RATE
                )
            except Exception:
                # The caller misses one sentence; the call goes on (and the log says why).
                log.exception("speech synthesis failed on a sentence")
        if reply.interrupted:
            return
        now = time.monotonic()
        start = max(now, self._busy_until)
        reply.sentences.append((start, sentence))
        if not pcm:
            return
        if reply.first_media_at is None:
            reply.first_media_at = now
        for offset in range(0, len(pcm), FRAME_BYTES):
            await self._connection.play(AudioFrame(pcm[offset : offset + FRAME_BYTES]))
        self._busy_until = start + len(pcm) / (SAMPLE_RATE * SAMPLE_WIDTH)
        reply.playout_ends_at = self._busy_until

    async def end_line(self, reply: Reply) -> None:
        if self._connection.media == "text" and self._pending_text:
            text = " ".join(self._pending_text)
            now = time.monotonic()
            reply.sentences = [*reply.sentences, (now, text)]
            if reply.first_media_at is None:
                reply.first_media_at = now
            self._pending_text = []
            await self._connection.play(TextFrame(text))

    async def interrupt(self, reply: Reply | None) -> None:
        """Stop speaking now: drop what is queued; the reply keeps what was heard of it."""
        if reply is not None:
            reply.interrupt()
        self._pending_text = []
        self._busy_until = 0.0
        await self._connection.interrupt()

    async def finish(self) -> None:
        """Return once the queued audio has been played."""
        remaining = self._busy_until - time.monotonic()
        if remaining > 0:
            await asyncio.sleep(remaining)
