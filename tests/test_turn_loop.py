"""Conversation behaviour on the fakes (tests/fakes.py): the real TurnLoop, Listener and
Speaker, with a fake line, brain, transcriber and synthesizer — each test in milliseconds. The
end-to-end tests (test_conversation*.py) keep what only the wire shows."""

from __future__ import annotations

import asyncio

import pytest

from callplane.brain import BrainError, TextDelta
from callplane.engine.agent import AgentSpec, Voicemail
from callplane.engine.conversation.turn_loop import (
    AGENT_HANGUP,
    APOLOGY,
    CLOSING_LINE,
    MAX_LENGTH,
    REMOTE_HANGUP,
    SILENCE,
    VOICEMAIL,
)
from tests.fakes import Conversation, FakeBrain, end_call


async def test_the_first_message_opens_the_call() -> None:
    call = Conversation(AgentSpec(first_message="Hi, this is Acme.")).start()
    await call.until(lambda: call.lines())
    call.hangs_up()
    assert await call.ended() == REMOTE_HANGUP
    assert call.lines() == ["Hi, this is Acme."]
    assert call.synthesizer.spoken == ["Hi, this is Acme."]


async def test_without_a_first_message_the_brain_opens_with_the_prompt_as_system() -> None:
    brain = FakeBrain(["Hello! How can I help?"])
    spec = AgentSpec(prompt="You sell boats.", model="m-1", temperature=0.3)
    call = Conversation(spec, brain).start()
    await call.until(lambda: call.lines())
    call.hangs_up()
    await call.ended()
    [(messages, model, temperature)] = brain.requests
    assert messages == [{"role": "system", "content": "You sell boats."}]
    assert (model, temperature) == ("m-1", 0.3)
    assert call.lines() == ["Hello! How can I help?"]


async def test_agent_speaks_first_false_waits_for_the_caller() -> None:
    brain = FakeBrain(["Yes?"])
    call = Conversation(AgentSpec(first_message="Hi", agent_speaks_first=False), brain).start()
    call.says("Hello")
    await call.until(lambda: call.lines())
    call.hangs_up()
    await call.ended()
    assert [(e["role"], e["text"]) for e in call.transcript] == [
        ("user", "Hello"),
        ("assistant", "Yes?"),
    ]


async def test_a_turn_is_heard_with_the_keyterms_answered_and_timed() -> None:
    brain = FakeBrain(["Sure, Friday at nine."])
    spec = AgentSpec(first_message="Hi.", keyterms=("Acme", "Friday"))
    call = Conversation(spec, brain).start()
    await call.until(lambda: call.lines())
    call.says("Can I come Friday?")
    await call.until(lambda: len(call.lines()) == 2)
    call.hangs_up()
    await call.ended()
    assert call.lines("user") == ["Can I come Friday?"]
    assert call.lines() == ["Hi.", "Sure, Friday at nine."]
    assert call.transcriber.hints == [("Acme", "Friday")]
    messages = brain.requests[0][0]
    assert messages[-1] == {"role": "user", "content": "Can I come Friday?"}
    assert len(call.latencies) == 1 and call.latencies[0] >= 0


async def test_a_replys_first_words_are_spoken_while_its_sentence_still_streams() -> None:
    rest_of_sentence = asyncio.Event()
    streamed = [TextDelta("Of course, "), TextDelta("I "), rest_of_sentence]
    brain = FakeBrain([[*streamed, TextDelta("can do that for you. Anything else?")]])
    call = Conversation(AgentSpec(agent_speaks_first=False), brain).start()
    call.says("Can you move it?")
    # The model has not finished the sentence, and the caller already hears its first words.
    await call.until(lambda: call.synthesizer.spoken == ["Of course,"])
    rest_of_sentence.set()
    await call.until(lambda: call.lines())
    call.hangs_up()
    await call.ended()
    assert call.synthesizer.spoken == ["Of course,", "I can do that for you.", "Anything else?"]
    assert call.lines() == ["Of course, I can do that for you. Anything else?"]
    assert len(call.latencies) == 1


async def test_an_early_barge_in_drops_the_answer_still_being_generated() -> None:
    brain = FakeBrain(["First answer.", "Second answer."], delay=0.2)
    call = Conversation(AgentSpec(agent_speaks_first=False), brain).start()
    call.says("One")
    await call.until(lambda: len(brain.requests) == 1)
    call.says("Two")
    await call.until(lambda: call.lines())
    call.hangs_up()
    await call.ended()
    # The brain answered both turns together; the first answer was never said.
    assert call.lines() == ["Second answer."]
    assert call.lines("user") == ["One", "Two"]
    assert brain.requests[1][0][-2:] == [
        {"role": "user", "content": "One"},
        {"role": "user", "content": "Two"},
    ]


async def test_a_late_barge_in_keeps_only_what_was_heard() -> None:
    long_line = "This first sentence is heard. " + "This one never is, it is cut off. " * 3
    brain = FakeBrain([long_line.strip()])
    # 10 ms a character: the first sentence plays for ~0.3 s before the next begins.
    call = Conversation(AgentSpec(agent_speaks_first=False), brain, ms_per_char=10).start()
    call.says("Tell me")
    await call.until(lambda: call.lines())
    call.begins_speaking()
    await call.until(lambda: call.connection.interruptions)
    call.says("Stop")
    await call.until(lambda: len(brain.requests) == 2)
    call.hangs_up()
    await call.ended()
    assert call.lines()[0] == "This first sentence is heard."


async def test_a_failing_brain_apologises_reports_and_hangs_up() -> None:
    brain = FakeBrain([BrainError("HTTP 500")])
    call = Conversation(AgentSpec(), brain).start()
    assert await call.ended() == AGENT_HANGUP
    assert call.lines() == [APOLOGY]
    assert call.events == [("agent.brain_error", {"error": "HTTP 500"})]
    assert call.connection.ended_by == "local"


async def test_end_call_hangs_up_once_the_line_has_been_heard() -> None:
    brain = FakeBrain([end_call("Goodbye then.")])
    call = Conversation(AgentSpec(agent_speaks_first=False), brain, ms_per_char=10).start()
    call.says("That's all")
    assert await call.ended() == AGENT_HANGUP
    assert call.lines() == ["Goodbye then."]
    assert [e.get("function_name") for e in call.transcript][-1] == "end_call"
    last_played = call.connection.played[0][0]
    assert call.connection.hung_up_at is not None
    assert call.connection.hung_up_at - last_played >= call.audio_seconds() * 0.9


async def test_the_maximum_length_ends_the_call() -> None:
    call = Conversation(AgentSpec(first_message="Hi.", max_duration_seconds=0.1)).start()
    assert await call.ended() == MAX_LENGTH
    assert call.connection.ended_by == "local"


async def test_a_silent_caller_gets_a_closing_line_then_the_call_ends() -> None:
    spec = AgentSpec(first_message="Hi.", silence_timeout_seconds=0.05)
    call = Conversation(spec).start()
    assert await call.ended() == SILENCE
    assert call.lines() == ["Hi.", CLOSING_LINE]
    assert call.events == [("agent.silence_timeout", {"seconds": 0.05})]


async def test_speech_resets_the_silence_clock() -> None:
    brain = FakeBrain(["Go on."])
    spec = AgentSpec(agent_speaks_first=False, silence_timeout_seconds=0.3)
    call = Conversation(spec, brain).start()
    call.says("Hello")
    await call.until(lambda: call.lines())
    call.hangs_up()
    assert await call.ended() == REMOTE_HANGUP


async def test_an_end_call_phrase_ends_the_call_once_spoken() -> None:
    brain = FakeBrain(["Thanks, have a GOOD DAY!"])
    spec = AgentSpec(agent_speaks_first=False, end_call_phrases=("good day",))
    call = Conversation(spec, brain).start()
    call.says("Bye")
    assert await call.ended() == AGENT_HANGUP
    assert call.lines() == ["Thanks, have a GOOD DAY!"]


async def test_voicemail_hang_up_says_nothing() -> None:
    spec = AgentSpec(first_message="Hi there.", voicemail=Voicemail("hang_up"))
    call = Conversation(spec, FakeBrain(), answered_by="voicemail").start()
    assert await call.ended() == VOICEMAIL
    assert call.connection.played == [] and call.transcript == []


async def test_voicemail_leave_message_waits_for_the_greeting_then_ends() -> None:
    brain = FakeBrain()
    spec = AgentSpec(
        first_message="Hi there.", voicemail=Voicemail("leave_message", "Please call Acme back.")
    )
    call = Conversation(spec, brain, answered_by="voicemail").start()
    call.says("You have reached Dana. Leave a message after the tone.")
    assert await call.ended() == VOICEMAIL
    assert call.lines() == ["Please call Acme back."]
    assert brain.requests == []  # the machine is not talked to


async def test_without_a_voicemail_rule_a_machine_is_talked_to_as_before() -> None:
    call = Conversation(AgentSpec(first_message="Hi there."), answered_by="voicemail").start()
    await call.until(lambda: call.lines())
    call.hangs_up()
    await call.ended()
    assert call.lines() == ["Hi there."]


async def test_a_tool_call_without_text_is_recorded() -> None:
    brain = FakeBrain([[TextDelta("One moment.")], end_call("")])
    call = Conversation(AgentSpec(agent_speaks_first=False), brain).start()
    call.says("Hi")
    await call.until(lambda: call.lines())
    call.says("Bye")
    assert await call.ended() == AGENT_HANGUP
    assert call.transcript[-1]["function_name"] == "end_call"


@pytest.mark.parametrize("media", ["audio", "text"])
async def test_the_silence_clock_starts_when_the_agent_has_finished_its_line(media: str) -> None:
    """A slow brain: the wait for it is not the caller's silence, and the caller gets the whole
    timeout once the answer has been heard (on text, the line is heard when it is sent)."""
    seconds = 0.3
    brain = FakeBrain(["Let me look that up for you."], delay=seconds * 1.5)
    spec = AgentSpec(first_message="Hi.", silence_timeout_seconds=seconds)
    call = Conversation(spec, brain, media=media).start()
    await call.until(lambda: call.lines())
    call.says("Can I come in on Friday?")
    assert await call.ended() == SILENCE
    assert call.lines() == ["Hi.", "Let me look that up for you.", CLOSING_LINE]
    answer, closing = [e for e in call.transcript if e["role"] == "assistant"][1:]
    assert closing["timestamp"] - answer["timestamp"] >= seconds - 0.002
