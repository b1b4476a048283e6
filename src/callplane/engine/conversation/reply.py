"""One agent line in flight, as livekit's ``SpeechHandle`` is, only smaller.

A ``Reply`` is created when the agent starts a line (its opening, an answer, a closing line)
and lives until the line has been heard or cut off. The speaker writes into it what it queued
and when each sentence starts being heard; the turn loop reads it to decide a barge-in, to
record the line in the transcript, and to wait for the line to be heard before hanging up
(``end_call`` and the end-call phrases wait for ``wait_for_playout``).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from callplane.brain.history import Said

#: How often a line waited for checks whether its hold is over.
HELD_POLL_SECONDS = 0.05


@dataclass(eq=False)
class Reply:
    #: The agent's opening (first_message or the brain's first line): not an answer to anything,
    #: so a caller turn does not supersede it.
    opening: bool = False
    #: (when it starts being heard, sentence), for every sentence queued so far.
    sentences: list[tuple[float, str]] = field(default_factory=list)
    #: When the line's first media was queued (the turn's response latency ends there).
    first_media_at: float | None = None
    #: When the last of the queued audio will have been heard.
    playout_ends_at: float = 0.0
    interrupted: bool = False
    #: Held: its audio stopped while the caller's sound is weighed (a backchannel resumes it
    #: where it stopped, anything else cuts it off there): ``Speaker.hold``.
    held: bool = False
    #: The line's transcript entry once recorded (a late barge-in shortens it).
    entry: Said | None = None
    #: The generation task (brain stream, synthesis); None for a line said outright.
    task: asyncio.Task[None] | None = None
    _generated: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def generating(self) -> bool:
        """Still being generated: the brain is answering or a sentence is being synthesised."""
        return not self._generated.is_set()

    @property
    def text(self) -> str:
        """Everything queued of the line (after an interruption: what was heard)."""
        return " ".join(sentence for _, sentence in self.sentences)

    def heard_text(self, now: float | None = None) -> str:
        """The sentences the caller has started hearing by now."""
        now = time.monotonic() if now is None else now
        return " ".join(sentence for start, sentence in self.sentences if start <= now)

    @property
    def playing(self) -> bool:
        return not self.interrupted and (self.held or time.monotonic() < self.playout_ends_at)

    def heard_since(self, at: float) -> bool:
        """Being heard now, and already when the caller began at ``at`` (speech from before
        the line began, replayed or queued, is no interruption of it)."""
        began = self.first_media_at
        return self.playing and began is not None and at >= began

    def generated(self) -> None:
        self._generated.set()

    def interrupt(self, held_at: float | None = None) -> None:
        """Cut off now (a held line: where it was held): the line keeps only what was heard of
        it."""
        now = time.monotonic()
        self.interrupted = True
        self.held = False
        if held_at is None:
            self.sentences = [(start, s) for start, s in self.sentences if start <= now]
        else:
            self.sentences = [(start, s) for start, s in self.sentences if start < held_at]
            now = held_at
        self.playout_ends_at = min(self.playout_ends_at, now)
        self._generated.set()

    async def wait_for_playout(self) -> None:
        """Return once the whole line has been generated and heard (or was cut off)."""
        await self._generated.wait()
        while not self.interrupted:
            remaining = self.playout_ends_at - time.monotonic()
            if self.held:
                remaining = HELD_POLL_SECONDS  # it plays on (or is cut) once the caller is heard
            elif remaining <= 0:
                return
            await asyncio.sleep(remaining)
