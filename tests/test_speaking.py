"""The speaker on a voice shared by every call: a reply's later sentence gives way to another
caller's first sentence (that caller is waiting; the later sentence has seconds of slack)."""

from __future__ import annotations

import asyncio
import threading

from callplane.engine.conversation.reply import Reply
from callplane.engine.conversation.speaking import Speaker
from callplane.speech.base import Synthesizer
from callplane.telephony.base import SAMPLE_WIDTH
from tests.fakes import ListeningLine


class SharedVoice(Synthesizer):
    """Ten seconds of audio a sentence; "hold" sentences wait until released."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.holding = threading.Event()
        self.release = threading.Event()

    def synthesize(self, text: str, sample_rate: int) -> bytes:
        self.started.append(text)
        if text.startswith("hold"):
            self.holding.set()
            self.release.wait(60)
        return bytes(10 * sample_rate * SAMPLE_WIDTH)


async def test_a_later_sentence_waits_for_another_callers_first() -> None:
    voice = SharedVoice()
    first_caller, second_caller = Speaker(ListeningLine(), voice), Speaker(ListeningLine(), voice)
    answer = Reply()
    await first_caller.say(answer, "Of course.")  # ten seconds to hear: the next has slack

    other = Reply()
    opening = asyncio.create_task(second_caller.say(other, "hold: the second caller's first"))
    assert await asyncio.to_thread(voice.holding.wait, 60)
    later = asyncio.create_task(first_caller.say(answer, "Anything else?"))
    await asyncio.sleep(0.2)
    assert voice.started == ["Of course.", "hold: the second caller's first"]

    voice.release.set()
    async with asyncio.timeout(60):
        await asyncio.gather(opening, later)
    assert voice.started[-1] == "Anything else?"
    assert [s for _, s in answer.sentences] == ["Of course.", "Anything else?"]
    assert other.first_media_at is not None


async def test_a_later_sentence_without_slack_does_not_wait() -> None:
    voice = SharedVoice()
    first_caller, second_caller = Speaker(ListeningLine(), voice), Speaker(ListeningLine(), voice)
    answer = Reply()
    answer.sentences.append((0.0, "said long ago"))  # nothing left playing: no slack
    opening = asyncio.create_task(second_caller.say(Reply(), "hold: the second caller's first"))
    try:
        assert await asyncio.to_thread(voice.holding.wait, 60)
        async with asyncio.timeout(60):
            # Synthesised beside the held first sentence (the pool has threads for both).
            await first_caller.say(answer, "Right away.")
        assert voice.started == ["hold: the second caller's first", "Right away."]
        assert answer.playout_ends_at > 0
    finally:
        voice.release.set()
        await opening


async def test_a_first_sentence_is_heard_from_its_first_clause() -> None:
    voice = SharedVoice()
    speaker = Speaker(ListeningLine(), voice)
    reply = Reply()
    await speaker.say(reply, "Of course, I can do that for you.")
    await speaker.say(reply, "Is there anything else, anything at all, I can help with?")
    # The caller waits only for "Of course,"; later sentences have the time it plays.
    assert voice.started == [
        "Of course,",
        "I can do that for you.",
        "Is there anything else, anything at all, I can help with?",
    ]
    # The transcript keeps the sentences as the brain wrote them, each from its start.
    assert [s for _, s in reply.sentences] == [
        "Of course, I can do that for you.",
        "Is there anything else, anything at all, I can help with?",
    ]
    assert reply.first_media_at is not None and reply.playout_ends_at > 0


def test_where_a_first_sentence_is_cut() -> None:
    from callplane.engine.conversation.speaking import first_audio_parts

    assert first_audio_parts("Let me check that, it will take a second.") == [
        "Let me check that,",
        "it will take a second.",
    ]
    # Not worth it: one word before the break, or three or fewer after it; no break at all.
    for sentence in ("Hi, this is Acme.", "It is 1,000 dollars, plus tax.", "Friday at nine."):
        assert first_audio_parts(sentence) == [sentence]
