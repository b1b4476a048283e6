"""The agent's mouth: reply sentences in, media out, and a clock of what is still being heard.

Audio: each sentence is synthesised off the event loop and queued on the connection, which
plays it in real time; so the next sentence is synthesised while this one is heard. Replies'
first sentences go first (``_Precedence``): a caller waits for those, not for later ones; and
a first sentence with an early clause break is synthesised in two parts (``first_audio_parts``). The
connection does not say when playback ends, so the speaker keeps the time it will (queued audio
duration from when it began) in the ``Reply``. Text: the reply's sentences are played as one
``TextFrame`` when the line ends (a simulated person answers each frame).

``prepare`` synthesises a speculative answer's first words before the caller's turn is sure to
be over (``speculation.py``): nothing of it is played until ``say`` is given the same words,
and ``forget`` drops it when the guess was wrong.

``interrupt`` (barge-in) drops whatever is queued; the reply keeps only the sentences the caller
heard the start of: that, not the whole generated reply, is what the transcript records.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import AsyncGenerator

from callplane.brain.sentences import opening_clause
from callplane.engine.conversation.reply import Reply
from callplane.speech.base import Synthesizer
from callplane.telephony.base import (
    FRAME_BYTES,
    SAMPLE_RATE,
    SAMPLE_WIDTH,
    AudioFrame,
    Connection,
    TextFrame,
)

log = logging.getLogger("callplane.engine.conversation.speaking")

#: A later sentence of a reply gives way to first sentences only while its own turn is this far
#: off: it must still be ready before the sentence before it has been heard.
LATER_MARGIN = 1.0


class _Precedence:
    """The first sentences of replies being synthesised now, on one event loop (a worker's
    calls). A reply's later sentences are heard only after the one before them (seconds of
    audio), so they wait for these: on a voice shared by every call (one Piper process), another
    caller's first words no longer queue behind them (the caller is waiting for those)."""

    def __init__(self) -> None:
        self.firsts = 0
        self.clear = asyncio.Event()
        self.clear.set()

    async def after_firsts(self, slack: float) -> None:
        if slack > 0:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(slack):
                    await self.clear.wait()


_precedence: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Precedence] = (
    weakref.WeakKeyDictionary()
)


def first_audio_parts(sentence: str) -> list[str]:
    """A reply's first sentence as it is synthesised: cut at its first clause break when both
    sides are worth it (two words or more before, four or more after), so the caller hears
    "Of course," while the rest is synthesised. Synthesis time grows with the audio's length
    (Piper: ~0.1 s of CPU a second of speech), and the first part is all the caller waits for.
    (A streamed reply has its clause cut as it arrives: ``SentenceSplitter``.)"""
    parts = opening_clause(sentence.strip())
    if parts is None or len(parts[1].split()) < 4:
        return [sentence]
    return list(parts)


def _precedence_here() -> _Precedence:
    loop = asyncio.get_running_loop()
    precedence = _precedence.get(loop)
    if precedence is None:
        precedence = _precedence[loop] = _Precedence()
    return precedence


class Speaker:
    def __init__(self, connection: Connection, synthesizer: Synthesizer | None) -> None:
        self._connection = connection
        self._synthesizer = synthesizer
        self._pending_text: list[str] = []
        #: Text lines ended with ``more``, played with the next line's frame.
        self._held_text: list[str] = []
        #: When everything queued on the connection, of any line, will have been heard.
        self._busy_until = 0.0
        #: A first part synthesised ahead (``prepare``), not yet said.
        self._prepared: _Prepared | None = None

    def use(self, synthesizer: Synthesizer | None) -> None:
        """Speak the next lines with ``synthesizer`` (the call changed language)."""
        self._synthesizer = synthesizer

    @property
    def speaking(self) -> bool:
        return time.monotonic() < self._busy_until

    async def say(self, reply: Reply, sentence: str) -> None:
        if self._connection.media == "text":
            self._pending_text.append(sentence)
            return
        first = not reply.sentences
        parts = first_audio_parts(sentence) if first else [sentence]
        for n, part in enumerate(parts):
            async with contextlib.aclosing(self._audio(part, first=first and n == 0)) as audio:
                begun = False
                async for pcm in audio:
                    if reply.interrupted:
                        return
                    now = time.monotonic()
                    start = max(now, self._busy_until)
                    if n == 0 and not begun:
                        # The transcript's sentence, heard from its first audio's start.
                        reply.sentences.append((start, sentence))
                    begun = True
                    if not pcm:
                        continue
                    if reply.first_media_at is None:
                        reply.first_media_at = now
                    for offset in range(0, len(pcm), FRAME_BYTES):
                        await self._connection.play(AudioFrame(pcm[offset : offset + FRAME_BYTES]))
                    self._busy_until = start + len(pcm) / (SAMPLE_RATE * SAMPLE_WIDTH)
                    reply.playout_ends_at = self._busy_until

    def prepare(self, sentence: str) -> None:
        """Synthesise ``sentence``'s first part as a line's first words would be, ahead and
        unheard: ``say`` plays it if it is given the same words with the same voice."""
        self.forget()
        if self._connection.media == "text" or self._synthesizer is None:
            return
        part = first_audio_parts(sentence)[0]
        self._prepared = _Prepared(part, self._synthesizer, self._synthesize(part, first=True))

    def forget(self) -> None:
        """Drop what ``prepare`` made (or is making): the words will not be said."""
        if self._prepared is not None:
            self._prepared.task.cancel()
            self._prepared = None

    def _audio(self, text: str, *, first: bool) -> AsyncGenerator[bytes, None]:
        prepared, self._prepared = self._prepared, None
        if first and prepared is not None and prepared.fits(text, self._synthesizer):
            return prepared.chunks()
        if prepared is not None:
            prepared.task.cancel()
        return self._synthesize(text, first=first)

    async def _synthesize(self, text: str, *, first: bool) -> AsyncGenerator[bytes, None]:
        """The part's audio as the synthesizer streams it; at least one chunk (empty when
        nothing can be said), so the sentence is recorded as begun."""
        if self._synthesizer is None:
            yield b""
            return
        precedence = _precedence_here()
        if first:
            precedence.firsts += 1
            precedence.clear.clear()
        else:
            await precedence.after_firsts(self._busy_until - time.monotonic() - LATER_MARGIN)
        chunks = 0
        try:
            async for pcm in self._synthesizer.stream(text, SAMPLE_RATE):
                chunks += 1
                yield pcm
        except Exception:
            # The caller misses (the rest of) one sentence; the call goes on (the log says why).
            log.exception("speech synthesis failed on a sentence")
        finally:
            if first:
                precedence.firsts -= 1
                if not precedence.firsts:
                    precedence.clear.set()
        if not chunks:
            yield b""

    async def end_line(self, reply: Reply, *, more: bool = False) -> None:
        """The line is complete. ``more``: another line follows at once (the disclosure before
        the opening), so on a text network both go as one frame: a simulated person answers
        each frame, and would otherwise answer the disclosure."""
        if self._connection.media != "text":
            return
        if self._pending_text:
            text = " ".join(self._pending_text)
            now = time.monotonic()
            reply.sentences = [*reply.sentences, (now, text)]
            if reply.first_media_at is None:
                reply.first_media_at = now
            self._pending_text = []
            self._held_text.append(text)
        if more or not self._held_text:
            return
        text, self._held_text = " ".join(self._held_text), []
        await self._connection.play(TextFrame(text))

    async def interrupt(self, reply: Reply | None) -> None:
        """Stop speaking now: drop what is queued; the reply keeps what was heard of it."""
        if reply is not None:
            reply.interrupt()
        self._pending_text = []
        self._held_text = []
        self._busy_until = 0.0
        await self._connection.interrupt()

    async def finish(self) -> None:
        """Return once the queued audio has been played."""
        remaining = self._busy_until - time.monotonic()
        if remaining > 0:
            await asyncio.sleep(remaining)


class _Prepared:
    """One part's audio, synthesised into memory as it comes; read back as it grows."""

    def __init__(
        self, text: str, synthesizer: Synthesizer, audio: AsyncGenerator[bytes, None]
    ) -> None:
        self.text = text
        self.synthesizer = synthesizer
        self._audio: list[bytes] = []
        self._grown = asyncio.Event()
        self._done = False
        self.task = asyncio.create_task(self._fill(audio))

    def fits(self, text: str, synthesizer: Synthesizer | None) -> bool:
        return text == self.text and synthesizer is self.synthesizer and not self.task.cancelled()

    async def _fill(self, audio: AsyncGenerator[bytes, None]) -> None:
        try:
            async with contextlib.aclosing(audio):
                async for pcm in audio:
                    self._audio.append(pcm)
                    self._grown.set()
        finally:
            self._done = True
            self._grown.set()

    async def chunks(self) -> AsyncGenerator[bytes, None]:
        read = 0
        try:
            while True:
                while read < len(self._audio):
                    read += 1
                    yield self._audio[read - 1]
                if self._done:
                    return
                self._grown.clear()
                await self._grown.wait()
        finally:
            if not self._done:  # the line was cut off before its first words were all made
                self.task.cancel()
