"""Backchannels on the fakes (tests/fakes.py): the caller's "uh-huh" while the agent speaks
holds its line for a moment and lets it play on, recorded as a backchannel and never answered;
a real sentence, or a short word that is no backchannel ("wait"), cuts it. The same over SIP:
test_conversation_sip.py."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest

from callplane.engine.agent import AgentSpec
from callplane.engine.conversation import turn_loop
from callplane.engine.conversation.backchannel import is_backchannel
from callplane.engine.conversation.listening import (
    CallerKeptSpeaking,
    CallerPaused,
    CallerSaid,
    CallerSpeaking,
    Listener,
)
from callplane.engine.conversation.reply import Reply
from callplane.engine.conversation.speaking import Speaker
from callplane.speech.base import Segment, Transcriber
from callplane.telephony.base import AudioFrame
from tests.fakes import Conversation, FakeBrain, FakeConnection, FakeSynthesizer
from tests.test_listening import PacedFrames, Recorder

SENTENCES = [
    "Our terrace is open from noon until ten in the evening.",
    "We can also arrange a birthday cake if you would like one.",
    "Please tell me how many guests will be joining you tonight.",
]
LONG_LINE = " ".join(SENTENCES)


def _agent_speaking(brain: FakeBrain) -> Conversation:
    # 20 ms a character: the line is heard for about 3.4 s.
    return Conversation(AgentSpec(agent_speaks_first=False), brain, ms_per_char=20).start()


async def _long_line_begins(call: Conversation) -> None:
    call.says("What are your hours?")
    await call.until(lambda: call.lines() == [LONG_LINE])  # generated whole, still being heard


def _entries(call: Conversation) -> list[tuple[str, str, bool]]:
    return [
        (e["role"], e["text"], e.get("backchannel", False)) for e in call.transcript if e["text"]
    ]


async def test_uh_huh_while_the_agent_speaks_does_not_cut_its_line() -> None:
    brain = FakeBrain([LONG_LINE])
    call = _agent_speaking(brain)
    await _long_line_begins(call)

    call.begins_speaking()
    await call.until(lambda: call.connection.interruptions == 1)  # held at the first sound
    played = len(call.connection.played)
    call.voices(300)
    call.pauses("Uh-huh.")
    await call.until(lambda: len(call.connection.played) > played)  # played on
    call.ends_turn("Uh-huh.")
    await call.until(lambda: len(_entries(call)) == 3)
    call.hangs_up()
    await call.ended()

    # The line is kept whole (nothing was cut), the backchannel recorded as one, and the brain
    # was not asked to answer it.
    assert _entries(call) == [
        ("user", "What are your hours?", False),
        ("assistant", LONG_LINE, False),
        ("user", "Uh-huh.", True),
    ]
    assert len(brain.requests) == 1
    assert call.connection.interruptions == 1


async def test_a_real_sentence_over_the_agent_cuts_its_line_before_it_ends() -> None:
    brain = FakeBrain([LONG_LINE, "Tuesday works."])
    call = _agent_speaking(brain)
    await _long_line_begins(call)

    call.begins_speaking()
    call.voices(800)  # longer than any backchannel: cut now, not when the turn ends
    await call.until(lambda: call.lines()[0] != LONG_LINE)
    call.ends_turn("Actually, can we do Tuesday instead?")
    await call.until(lambda: len(call.lines()) == 2)
    call.hangs_up()
    await call.ended()

    assert LONG_LINE.startswith(call.lines()[0])
    assert _entries(call)[2:] == [
        ("user", "Actually, can we do Tuesday instead?", False),
        ("assistant", "Tuesday works.", False),
    ]
    assert brain.requests[1][0][-1] == {
        "role": "user",
        "content": "Actually, can we do Tuesday instead?",
    }


async def test_a_short_word_that_is_no_backchannel_cuts_the_line() -> None:
    brain = FakeBrain([LONG_LINE, "Of course, go ahead."])
    call = _agent_speaking(brain)
    await _long_line_begins(call)

    call.begins_speaking()
    call.voices(300)
    call.pauses("Wait.")  # as short as "okay", but it means stop
    await call.until(lambda: call.lines()[0] != LONG_LINE)
    call.ends_turn("Wait.")
    await call.until(lambda: len(call.lines()) == 2)
    call.hangs_up()
    await call.ended()

    assert [text for role, text, _ in _entries(call) if role == "user"] == [
        "What are your hours?",
        "Wait.",
    ]
    assert call.lines()[1] == "Of course, go ahead."


async def test_a_noise_over_the_agent_lets_its_line_play_on_unrecorded() -> None:
    brain = FakeBrain([LONG_LINE])
    call = _agent_speaking(brain)
    await _long_line_begins(call)

    call.begins_speaking()
    await call.until(lambda: call.connection.interruptions == 1)
    call.pauses("")  # a cough: no words
    played = len(call.connection.played)
    await call.until(lambda: len(call.connection.played) > played)  # the line goes on
    call.hangs_up()
    await call.ended()

    assert _entries(call) == [
        ("user", "What are your hours?", False),
        ("assistant", LONG_LINE, False),
    ]
    assert len(brain.requests) == 1


async def test_a_backchannel_that_goes_on_is_an_ordinary_turn() -> None:
    brain = FakeBrain([LONG_LINE, "Tuesday works."])
    call = _agent_speaking(brain)
    await _long_line_begins(call)

    call.begins_speaking()
    call.voices(300)
    call.pauses("Uh-huh.")
    await call.until(lambda: any(bc for _, _, bc in _entries(call)))
    call.voices(800)  # the caller goes on: the line is stopped again, and cut
    await call.until(lambda: call.lines()[0] != LONG_LINE)
    call.ends_turn("Uh-huh, but can we do Tuesday?")
    await call.until(lambda: len(call.lines()) == 2)
    call.hangs_up()
    await call.ended()

    # The whole turn is recorded once, as a turn: the backchannel entry gave way to it.
    assert [(role, text, bc) for role, text, bc in _entries(call) if role == "user"] == [
        ("user", "What are your hours?", False),
        ("user", "Uh-huh, but can we do Tuesday?", False),
    ]
    assert brain.requests[1][0][-1]["content"] == "Uh-huh, but can we do Tuesday?"


async def test_the_brain_is_not_sent_a_backchannel() -> None:
    brain = FakeBrain([LONG_LINE, "Six, then."])
    call = _agent_speaking(brain)
    await _long_line_begins(call)
    call.begins_speaking()
    call.pauses("Yeah.")
    call.ends_turn("Yeah.")
    await call.until(lambda: len(_entries(call)) == 3)
    call.says("Six people, please.")
    await call.until(lambda: len(call.lines()) == 2)
    call.hangs_up()
    await call.ended()

    contents = [m["content"] for m in brain.requests[1][0] if m["role"] == "user"]
    assert contents == ["What are your hours?", "Six people, please."]


@pytest.mark.parametrize(
    "text",
    [
        "Uh-huh.",
        "Mm-hmm.",
        "Mhm.",
        "Mmm.",
        "Yeah.",
        "Yeah, yeah.",
        "Okay.",
        "OK.",
        "Right.",
        "All right.",
        "Sí, sí.",
        "Vale.",
        "D\u2019accord.",
        "Ouais.",
        "Genau.",
        "Ja, ja.",
        "Tá bom.",
        "Va bene.",
    ],
)
def test_backchannels(text: str) -> None:
    assert is_backchannel(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Wait.",
        "No.",
        "Stop!",
        "Thank you.",
        "Yeah, but what about Friday?",
        "Um,",
        "Hello?",
        "Espera.",
        "Non, attendez.",
        "Sí, pero el viernes no.",
    ],
)
def test_not_backchannels(text: str) -> None:
    assert not is_backchannel(text)


class Words(Transcriber):
    def transcribe(
        self,
        pcm: bytes,
        sample_rate: int,
        *,
        hints: Sequence[str] = (),
        abandoned: threading.Event | None = None,
    ) -> list[Segment]:
        return [Segment(text="Uh-huh.", start=0.0, end=0.5, confidence=1.0)]


PAUSE, END = "0" * 15, "0" * 30  # 20 ms frames


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        # 500 ms of voice, then a pause: a backchannel's length, reported with its words.
        pytest.param("1" * 25 + END, [CallerSpeaking, CallerPaused, CallerSaid], id="short"),
        # 900 ms: longer than any backchannel, said as soon as it is.
        pytest.param("1" * 45 + END, [CallerSpeaking, CallerKeptSpeaking, CallerSaid], id="long"),
    ],
)
async def test_the_listener_says_how_long_the_caller_spoke(
    script: str, expected: list[type]
) -> None:
    detector = Recorder(script)
    listener = Listener(PacedFrames(len(script)), transcriber=Words(), detector=lambda: detector)

    events = [type(e) for e in [e async for e in listener.events()]]

    assert [e for e in events if e in set(expected)] == expected


async def test_the_listener_reports_speech_again_after_a_pause() -> None:
    script = "1" * 10 + PAUSE + "1" * 10 + END
    detector = Recorder(script)
    listener = Listener(PacedFrames(len(script)), transcriber=Words(), detector=lambda: detector)

    events = [type(e) for e in [e async for e in listener.events()]]

    assert events.count(CallerSpeaking) == 2
    assert CallerKeptSpeaking not in events


async def test_a_held_line_goes_on_from_where_it_stopped() -> None:
    connection = FakeConnection()
    speaker = Speaker(connection, FakeSynthesizer(ms_per_char=10))
    reply = Reply()
    await speaker.say(reply, "a" * 100)  # heard for 1 s
    await speaker.say(reply, "b" * 100)
    queued = sum(len(f.pcm) for _, f in connection.played if isinstance(f, AudioFrame))
    second_starts = reply.sentences[1][0]

    assert await speaker.hold(reply)
    assert reply.held and reply.playing
    await asyncio.sleep(0.05)
    await speaker.resume(reply)

    # What had not been heard is played again from where it stopped (not the whole line), and
    # the second sentence is heard as much later as the line was held.
    requeued = sum(len(f.pcm) for _, f in connection.played if isinstance(f, AudioFrame)) - queued
    assert 0 < requeued < queued
    assert reply.sentences[1][0] - second_starts >= 0.05
    assert not reply.held and connection.interruptions == 1


async def test_a_held_line_cut_off_keeps_what_was_heard_before_the_hold() -> None:
    connection = FakeConnection()
    speaker = Speaker(connection, FakeSynthesizer(ms_per_char=10))
    reply = Reply()
    await speaker.say(reply, "First sentence, heard for a second or so." + "." * 60)
    assert await speaker.hold(reply)
    await speaker.say(reply, "Second sentence, synthesised while the line was held.")
    await asyncio.sleep(0.05)
    await speaker.interrupt(reply)

    assert reply.interrupted and not reply.held
    assert reply.text.startswith("First sentence")
    assert "Second" not in reply.text


async def test_okay_over_the_last_words_of_a_question_answers_it() -> None:
    question = "So, shall I book you in for Friday at nine?"
    brain = FakeBrain([question, "Done, see you Friday."])
    # 20 ms a character: under a second of the line is left when the caller speaks.
    call = Conversation(AgentSpec(agent_speaks_first=False), brain, ms_per_char=20).start()
    call.says("Can I come this week?")
    await call.until(lambda: call.lines() == [question])
    await asyncio.sleep(0.3)
    call.begins_speaking()
    call.pauses("Okay.")
    call.ends_turn("Okay.")
    await call.until(lambda: len(call.lines()) == 2)
    call.hangs_up()
    await call.ended()

    assert ("user", "Okay.", False) in _entries(call)
    assert brain.requests[1][0][-1] == {"role": "user", "content": "Okay."}


async def test_words_that_come_after_the_hold_limit_still_decide(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A busy worker: the line plays on at the limit, and "uh-huh" recognised later is still a
    # backchannel, not a turn (nor an answer: much of the line is left).
    monkeypatch.setattr(turn_loop, "HOLD_LIMIT_SECONDS", 0.05)
    brain = FakeBrain([LONG_LINE])
    call = _agent_speaking(brain)
    await _long_line_begins(call)

    call.begins_speaking()
    await call.until(lambda: call.connection.interruptions == 1)
    played = len(call.connection.played)
    await call.until(lambda: len(call.connection.played) > played)  # played on at the limit
    call.pauses("Uh-huh.")
    call.ends_turn("Uh-huh.")
    await call.until(lambda: len(_entries(call)) == 3)
    call.hangs_up()
    await call.ended()

    assert _entries(call)[2] == ("user", "Uh-huh.", True)
    assert len(brain.requests) == 1
