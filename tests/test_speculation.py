"""Speculative replies on the conversation fakes (tests/fakes.py): the brain is asked on the
caller's pause, its answer kept when the turn ends on the same words, discarded unheard (and
its tools never run) when it does not."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from prometheus_client import REGISTRY

from callplane.brain import ReplyEvent, TextDelta, ToolCall
from callplane.engine.agent import AgentSpec
from callplane.engine.conversation.speculation import normal
from callplane.engine.conversation.transcript import TranscriptLog
from callplane.privacy.redaction import Redactor
from callplane.telephony.base import SAMPLE_RATE
from callplane.tools import Tool, ToolContext, ToolResult
from callplane.tools.toolbox import Toolbox
from tests.fakes import Conversation, FakeBrain, FakeSynthesizer

#: The caller speaks first: the only requests are the turns'.
LISTENS = AgentSpec(agent_speaks_first=False)


def outcomes() -> tuple[float, float]:
    def value(outcome: str) -> float:
        sample = "callplane_speculative_replies_total"
        return REGISTRY.get_sample_value(sample, {"outcome": outcome}) or 0.0

    return value("kept"), value("discarded")


def counted(before: tuple[float, float], kept: int, discarded: int) -> bool:
    after = outcomes()
    return (after[0] - before[0], after[1] - before[1]) == (kept, discarded)


def last_words(messages: list[dict[str, Any]]) -> str:
    return [m["content"] for m in messages if m["role"] == "user"][-1]


def audio_of(*lines: str) -> int:
    """Bytes of audio the fake synthesizer makes of ``lines``."""
    return sum(len(FakeSynthesizer().synthesize(line, SAMPLE_RATE)) for line in lines)


def played_bytes(call: Conversation) -> int:
    return sum(len(getattr(frame, "pcm", b"")) for _, frame in call.connection.played)


class HeldBrain(FakeBrain):
    """A ``FakeBrain`` whose answers hold after their first words until ``release`` is set,
    and which notes the streams stopped before they ended."""

    def __init__(self, replies: list[Any]) -> None:
        super().__init__(replies)
        self.release = asyncio.Event()
        self.stopped = 0

    async def stream_reply(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[dict[str, Any]] = (),
        model: str | None = None,
        temperature: float | None = None,
    ) -> AsyncIterator[ReplyEvent]:
        ended = False
        try:
            async for event in super().stream_reply(
                messages, tools=tools, model=model, temperature=temperature
            ):
                yield event
                await self.release.wait()
            ended = True
        finally:
            if not ended:
                self.stopped += 1


class Booking(Tool):
    """A tool with a side effect: each run is a booking made."""

    type = "booking"

    def __init__(self) -> None:
        super().__init__({"name": "book"})
        self.runs: list[dict[str, Any]] = []

    def parameters(self) -> dict[str, Any]:
        return {"type": "object", "properties": {"seats": {"type": "integer"}}}

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        self.runs.append(arguments)
        return ToolResult({"booked": arguments.get("seats")})


def test_words_are_compared_without_case_punctuation_or_spacing() -> None:
    assert normal("  I'd like a table, please. ") == normal("i'd like a table please")
    assert normal("A table for two.") != normal("A table for two?") + " please"


async def test_a_kept_guess_asks_the_brain_once_and_is_heard_only_after_the_turn() -> None:
    before = outcomes()
    brain = FakeBrain(["Of course, for how many people?"])
    call = Conversation(LISTENS, brain, speculative=True).start()
    call.begins_speaking()
    call.pauses("I'd like a table, please.")
    await call.until(lambda: brain.requests and call.synthesizer.spoken)
    await asyncio.sleep(0.02)  # time for any audio that would wrongly go out early
    assert call.connection.played == []
    assert last_words(brain.requests[0][0]) == "I'd like a table, please."

    call.ends_turn("i'd like a table please")
    await call.until(lambda: call.lines())
    call.hangs_up()
    await call.ended()
    assert len(brain.requests) == 1
    assert call.lines() == ["Of course, for how many people?"]
    assert call.lines("user") == ["i'd like a table please"]  # the final words are recorded
    assert call.synthesizer.spoken == ["Of course,", "for how many people?"]  # made once
    assert played_bytes(call) == audio_of("Of course,", "for how many people?")
    assert len(call.latencies) == 1
    assert counted(before, kept=1, discarded=0)


async def test_other_final_words_discard_the_guess_unheard_and_ask_again() -> None:
    before = outcomes()
    brain = HeldBrain([[TextDelta("A table, sure. Anything else?")], "A table for two, at eight."])
    call = Conversation(LISTENS, brain, speculative=True).start()
    call.begins_speaking()
    call.pauses("I'd like a table")
    await call.until(lambda: call.synthesizer.spoken)  # the guess's first words, made ahead

    call.ends_turn("I'd like a table for two at eight")
    await call.until(lambda: len(brain.requests) == 2)
    brain.release.set()
    await call.until(lambda: call.lines())
    call.hangs_up()
    await call.ended()
    assert brain.stopped == 1  # the guess's request was cancelled
    assert last_words(brain.requests[1][0]) == "I'd like a table for two at eight"
    assert call.lines() == ["A table for two, at eight."]
    # The guess's first words were made, never played.
    assert call.synthesizer.spoken == ["A table, sure.", "A table for two,", "at eight."]
    assert played_bytes(call) == audio_of("A table for two,", "at eight.")
    assert counted(before, kept=0, discarded=1)


async def test_a_caller_going_on_after_the_pause_drops_the_guess() -> None:
    before = outcomes()
    brain = HeldBrain(["Which day?", "Friday at nine is free."])
    call = Conversation(LISTENS, brain, speculative=True).start()
    call.begins_speaking()
    call.pauses("I'd like to book")
    await call.until(lambda: brain.requests)
    call.voices(200)  # speaks again
    await call.until(lambda: brain.stopped == 1)  # dropped before the turn ended
    assert counted(before, kept=0, discarded=1)

    call.ends_turn("I'd like to book Friday at nine.")
    brain.release.set()
    await call.until(lambda: call.lines())
    call.hangs_up()
    await call.ended()
    assert [last_words(messages) for messages, _, _ in brain.requests] == [
        "I'd like to book",
        "I'd like to book Friday at nine.",
    ]
    assert call.lines() == ["Friday at nine is free."]
    assert played_bytes(call) == audio_of("Friday at nine is free.")


async def test_a_discarded_guess_never_runs_its_tools() -> None:
    before = outcomes()
    booking = Booking()
    brain = FakeBrain(
        [
            [ToolCall("book", {"seats": 2})],
            [TextDelta("Which name is the booking under?")],
        ]
    )
    call = Conversation(LISTENS, brain, speculative=True, toolbox=Toolbox([booking])).start()
    call.begins_speaking()
    call.pauses("Book two seats.")
    await call.until(lambda: brain.requests)
    await asyncio.sleep(0.02)  # time for a tool that would wrongly run early
    assert booking.runs == []

    call.ends_turn("Book two seats, no, wait.")
    await call.until(lambda: call.lines())
    call.hangs_up()
    await call.ended()
    assert booking.runs == []
    assert len(brain.requests) == 2
    assert not any(e.get("function_name") for e in call.transcript)
    assert call.lines() == ["Which name is the booking under?"]
    assert counted(before, kept=0, discarded=1)


async def test_a_kept_guess_runs_its_tools_once_after_the_turn() -> None:
    before = outcomes()
    booking = Booking()
    brain = FakeBrain([[ToolCall("book", {"seats": 2})], "Booked: two seats."])
    call = Conversation(LISTENS, brain, speculative=True, toolbox=Toolbox([booking])).start()
    call.begins_speaking()
    call.pauses("Book two seats.")
    await call.until(lambda: brain.requests)
    await asyncio.sleep(0.02)
    assert booking.runs == []

    call.ends_turn("Book two seats.")
    await call.until(lambda: call.lines())
    call.hangs_up()
    await call.ended()
    assert booking.runs == [{"seats": 2}]
    assert len(brain.requests) == 2  # the guess's, then the one with the tool's answer
    assert brain.requests[1][0][-1]["role"] == "tool"
    assert call.lines() == ["Booked: two seats."]
    assert counted(before, kept=1, discarded=0)


async def test_without_speculation_the_brain_waits_for_the_turn() -> None:
    before = outcomes()
    brain = FakeBrain(["Sure."])
    call = Conversation(LISTENS, brain).start()
    call.begins_speaking()
    call.pauses("Hello there.")
    await asyncio.sleep(0.02)
    assert brain.requests == []
    call.ends_turn("Hello there.")
    await call.until(lambda: call.lines())
    call.hangs_up()
    await call.ended()
    assert len(brain.requests) == 1
    assert counted(before, kept=0, discarded=0)


def test_a_guess_is_redacted_for_the_brain_as_the_turn_will_be() -> None:
    redactor = Redactor.from_config({"entities": ["credit_card"], "llm": True})
    log = TranscriptLog([], lambda: 1.0, redactor=redactor)
    said = "My card is 4111 1111 1111 1111."
    guessed = log.messages_if(time.monotonic(), said, None)
    assert redactor is not None and not redactor.counts  # a guess is not a redaction made
    log.say(time.monotonic(), "user", said)
    assert "4111" not in guessed[-1]["content"]
    assert guessed == log.messages(None)
