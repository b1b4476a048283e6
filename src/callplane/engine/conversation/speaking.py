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
``hold`` stops the audio at once but keeps what was not heard yet (the speaker knows what it
queued and when each piece started), so that ``resume`` plays the line on from where it stopped:
the caller said "uh-huh", not "stop".
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


def _seconds(pcm_bytes: int) -> float:
    return pcm_bytes / (SAMPLE_RATE * SAMPLE_WIDTH)


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
        #: (when it starts being heard, audio) of what is queued and may not be heard yet: a
        #: hold takes back what has not been.
        self._queued: list[tuple[float, bytes]] = []
        #: While the line is held: the audio it will go on with, and when it stopped.
        self._held: bytearray | None = None
        self._held_at = 0.0
        #: The lines with audio in the hold (a line after a tool call follows the held one).
        self._held_lines: list[Reply] = []
        #: A first part synthesised ahead (``prepare``), not yet said.
        self._prepared: _Prepared | None = None

    def use(self, synthesizer: Synthesizer | None) -> None:
        """Speak the next lines with ``synthesizer`` (the call changed language)."""
        self._synthesizer = synthesizer

    @property
    def held_seconds(self) -> float:
        """How much of the held line is still to be heard (0 when none is held)."""
        return _seconds(len(self._held)) if self._held is not None else 0.0

    @property
    def speaking(self) -> bool:
        return self._held is not None or time.monotonic() < self._busy_until

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
                    if self._held is not None:
                        # Kept for when the line goes on: it would start after what is held.
                        start = self._held_at + _seconds(len(self._held))
                    if n == 0 and not begun:
                        # The transcript's sentence, heard from its first audio's start.
                        reply.sentences.append((start, sentence))
                    begun = True
                    if not pcm:
                        continue
                    if reply.first_media_at is None:
                        reply.first_media_at = now
                    if self._held is not None:
                        self._held += pcm
                        if reply not in self._held_lines:
                            reply.held = True
                            self._held_lines.append(reply)
                        continue
                    await self._queue(pcm, start)
                    reply.playout_ends_at = self._busy_until

    async def _queue(self, pcm: bytes, start: float) -> None:
        for offset in range(0, len(pcm), FRAME_BYTES):
            await self._connection.play(AudioFrame(pcm[offset : offset + FRAME_BYTES]))
        self._busy_until = start + _seconds(len(pcm))
        now = time.monotonic()
        self._queued = [(s, a) for s, a in self._queued if s + _seconds(len(a)) > now]
        self._queued.append((start, pcm))

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
        """Stop speaking now: drop what is queued; the reply keeps what was heard of it (a
        held line: what was heard before it was held)."""
        held_at = self._held_at if self._held is not None else None
        lines = self._held_lines if held_at is not None else []
        if reply is not None:
            reply.interrupt(held_at if reply in lines else None)
        for line in lines:
            if line is not reply:
                line.interrupt(held_at)
        self._pending_text = []
        self._held_text = []
        self._busy_until = 0.0
        self._queued = []
        self._held = None
        self._held_lines = []
        await self._connection.interrupt()

    async def hold(self, reply: Reply) -> bool:
        """Stop the line's audio now without cutting the line off: what was not heard yet is
        kept (and what is still synthesised is added to it) until ``resume`` plays it on from
        where it stopped, or ``interrupt`` drops it. False when nothing can be held (a text
        line is played whole; nothing of the line is still to be heard)."""
        if self._connection.media == "text" or self._held is not None or reply.held:
            return False
        now = time.monotonic()
        rest = bytearray()
        for start, pcm in self._queued:
            unheard = int(max(0.0, now - start) * SAMPLE_RATE) * SAMPLE_WIDTH
            rest += pcm[unheard:]
        if not rest and not reply.generating:
            return False
        self._held, self._held_at = rest, now
        self._held_lines = [reply]
        self._queued = []
        self._busy_until = now
        reply.held = True
        await self._connection.interrupt()
        return True

    async def resume(self, reply: Reply) -> None:
        """Play a held line on from where it stopped: its sentences not yet heard are heard
        that much later."""
        held = self._held
        if held is None or not reply.held:
            return
        now = time.monotonic()
        delay = now - self._held_at
        lines, self._held, self._held_lines = self._held_lines, None, []
        for line in lines:
            line.held = False
            line.sentences = [
                (start + delay if start >= self._held_at else start, sentence)
                for start, sentence in line.sentences
            ]
        if held:
            await self._queue(bytes(held), now)
        for line in lines:
            line.playout_ends_at = max(self._busy_until, now)

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
