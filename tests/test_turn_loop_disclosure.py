"""The disclosure line and the voicemail message's timing, on the fakes (tests/fakes.py): the
real TurnLoop, Listener and Speaker with a fake line."""

from __future__ import annotations

import time

from callplane.engine.agent import AgentSpec, Voicemail
from callplane.engine.conversation.turn_loop import REMOTE_HANGUP, VOICEMAIL
from callplane.telephony.base import AudioFrame
from tests.fakes import Conversation, FakeBrain
from tests.sipp_peer import tone_pcm
from tests.speech_audio import noise

DISCLOSURE = "This call is recorded, and I am an automated assistant."


async def test_the_disclosure_is_said_before_the_first_message() -> None:
    spec = AgentSpec(disclosure=DISCLOSURE, first_message="Hi, this is Acme.")
    call = Conversation(spec).start()
    await call.until(lambda: len(call.lines()) == 2)
    call.hangs_up()
    assert await call.ended() == REMOTE_HANGUP
    assert call.lines() == [DISCLOSURE, "Hi, this is Acme."]
    assert call.synthesizer.spoken[0].startswith("This call is recorded")
    # Two lines of the transcript, each where it began to be heard.
    assert call.transcript[0]["timestamp"] <= call.transcript[1]["timestamp"]


async def test_the_disclosure_comes_before_the_brains_opening_and_is_in_its_history() -> None:
    brain = FakeBrain(["Hello! How can I help?"])
    call = Conversation(AgentSpec(disclosure=DISCLOSURE, prompt="You sell boats."), brain).start()
    await call.until(lambda: len(call.lines()) == 2)
    call.hangs_up()
    await call.ended()
    assert call.lines() == [DISCLOSURE, "Hello! How can I help?"]


async def test_the_disclosure_is_said_even_when_the_caller_speaks_first() -> None:
    spec = AgentSpec(disclosure=DISCLOSURE, agent_speaks_first=False)
    call = Conversation(spec, FakeBrain(["Sure."])).start()
    await call.until(lambda: call.lines())
    call.says("I'd like a boat.")
    await call.until(lambda: len(call.lines()) == 2)
    call.hangs_up()
    await call.ended()
    assert call.lines() == [DISCLOSURE, "Sure."]


async def test_a_caller_speaking_over_the_disclosure_does_not_cut_it_off() -> None:
    spec = AgentSpec(disclosure=DISCLOSURE, first_message="Hi, this is Acme.")
    # 20 ms a character: the disclosure plays for about a second.
    call = Conversation(spec, FakeBrain(["Happy to help."]), ms_per_char=20).start()
    await call.until(lambda: call.connection.played)
    call.says("Hello?")
    await call.until(lambda: len(call.lines()) == 3)
    call.hangs_up()
    await call.ended()
    assert call.lines() == [DISCLOSURE, "Hi, this is Acme.", "Happy to help."]
    assert call.connection.interruptions == 0
    # The first message is placed where it began to be heard, after the whole disclosure
    # (55 characters at 20 ms: 1.1 s of audio).
    disclosure, first, _ = [e for e in call.transcript if e["role"] == "assistant"]
    assert first["timestamp"] - disclosure["timestamp"] >= 1.0


async def test_a_voicemail_message_waits_for_the_beep_and_follows_the_disclosure() -> None:
    spec = AgentSpec(
        disclosure=DISCLOSURE,
        first_message="Hi there.",
        voicemail=Voicemail("leave_message", "Please call Acme back."),
    )
    call = Conversation(spec, FakeBrain(), answered_by="voicemail").start()
    greeting = noise(1.0, 3000) + tone_pcm(1000, 0.4)
    for offset in range(0, len(greeting), 320):
        call.connection.send(greeting[offset : offset + 320])
    beep_sent = time.monotonic()
    assert await call.ended() == VOICEMAIL
    assert call.lines() == [DISCLOSURE, "Please call Acme back."]
    played = [when for when, frame in call.connection.played if isinstance(frame, AudioFrame)]
    # Nothing was said over the greeting or the beep.
    assert played and min(played) >= beep_sent


async def test_a_voicemail_hang_up_says_not_even_the_disclosure() -> None:
    spec = AgentSpec(disclosure=DISCLOSURE, voicemail=Voicemail("hang_up"))
    call = Conversation(spec, FakeBrain(), answered_by="voicemail").start()
    assert await call.ended() == VOICEMAIL
    assert call.connection.played == []
