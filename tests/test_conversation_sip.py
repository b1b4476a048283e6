"""The agent on a real SIP call (SIPp on loopback as the phone): the caller's espeak-ng speech
is recognised, the brain's reply is heard on the line; a caller's "uh-huh" over the agent does
not cut its line, a sentence over it does (barge-in), and the agent answers a sentence with a
comma or a thinking pause in it only once it is over."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from callplane.engine.conversation.speculation import normal
from callplane.speech.synthesis import EspeakSynthesizer
from callplane.telephony.base import SAMPLE_RATE, SAMPLE_WIDTH
from callplane.telephony.recording import JITTER_ALLOWANCE_BYTES
from tests.conftest import AppFactory, client_for
from tests.hearing import heard_enough_of
from tests.llm_stub import Reply, StubLLM
from tests.sipp_peer import answer_scenario, pcmu_file, requires_sipp, start_sipp, wav_channels
from tests.speech_audio import spoken
from tests.test_sip_calls import TERMINAL, _place, _recording, _sip_app, _until

pytestmark = requires_sipp

RATE = 8000
# Long enough that a caller speaking 9 s in interrupts it before its last sentence begins,
# whether the reply starts 0.6 s after their turn (a quiet machine) or several seconds after:
# a sentence begun is kept whole in the transcript, so a cut needs one not yet begun.
LONG_REPLY = (
    "Certainly, I can help you with that booking today. We have tables available on Friday "
    "evening from six until ten o'clock. Our terrace is open when the weather is good, and we "
    "can also arrange a birthday cake if you would like one. Please tell me how many guests "
    "will be joining you, and whether anyone in your party has allergies we should know about."
)


def _speech(text: str) -> bytes:
    return EspeakSynthesizer().synthesize(text, RATE)


def _silence(seconds: float) -> bytes:
    return bytes(int(seconds * RATE) * 2)


def _speculations() -> tuple[float, float]:
    """Speculative replies (``CALLPLANE_SPECULATIVE_REPLY``, on by default) kept and discarded so
    far in this process."""
    name = "callplane_speculative_replies_total"
    return tuple(  # type: ignore[return-value]
        REGISTRY.get_sample_value(name, {"outcome": outcome}) or 0.0
        for outcome in ("kept", "discarded")
    )


#: How much earlier than it really ended the caller's speech may seem to end, next to the
#: agent's, in the stored recording: the far end's track may lag the agent's by the recorder's
#: jitter allowance, and ``_voiced_spans`` sees 100 ms windows (an answer begun in the window
#: where the caller stopped starts at that window's start, the caller ends at its end). A reply
#: given in a pause mid-sentence would begin over a second before the sentence's end.
ALIGNMENT_SECONDS = JITTER_ALLOWANCE_BYTES / (SAMPLE_RATE * SAMPLE_WIDTH) + 0.1


def _answered_after(reply_starts: float, caller_ends: float) -> bool:
    return reply_starts >= caller_ends - ALIGNMENT_SECONDS


def _level(samples: list[int], start: float, end: float) -> float:
    window = samples[int(start * RATE) : int(end * RATE)]
    return math.sqrt(sum(s * s for s in window) / len(window)) if window else 0.0


def _voiced_spans(samples: list[int], threshold: float = 300) -> list[tuple[float, float]]:
    """Stretches (in seconds) where 100 ms windows are louder than ``threshold``, gaps < 0.6 s
    bridged."""
    step = RATE // 10
    loud = [
        _level(samples, i / RATE, (i + step) / RATE) > threshold
        for i in range(0, len(samples), step)
    ]
    spans: list[tuple[float, float]] = []
    for n, on in enumerate(loud):
        if not on:
            continue
        if spans and n / 10 - spans[-1][1] < 0.6:
            spans[-1] = (spans[-1][0], (n + 1) / 10)
        else:
            spans.append((n / 10, (n + 1) / 10))
    return spans


@pytest.fixture
def brain() -> Iterator[StubLLM]:
    with StubLLM(
        replies=[LONG_REPLY, Reply("Of course. Goodbye!", "end_call", {"reason": "caller left"})]
    ) as server:
        yield server


async def test_the_caller_is_heard_and_the_agents_reply_is_heard_after(
    make_app: AppFactory, tmp_path: Path, brain: StubLLM
) -> None:
    said = _speech("I would like to book a table for four people on Friday evening.")
    audio = pcmu_file(_silence(0.3) + said, tmp_path, "caller.pcmu")
    # Generous limits: recognition on a loaded 2-core machine can take seconds per turn.
    sipp = await start_sipp(answer_scenario(tmp_path, audio, hangup="near"), timeout_seconds=90)
    app = await _sip_app(
        make_app,
        sip_trunk=f"sip:127.0.0.1:{sipp.port}",
        llm_base_url=brain.base_url,
        llm_timeout_seconds=10,
        max_call_seconds=25,
        # Long enough for the pause's words to be read before the turn ends on a quiet machine,
        # so the brain is asked on them (a speculative reply) and its end_call kept.
        end_of_turn_ms_complete=700,
    )
    brain.replies = [Reply("Certainly, a table for four on Friday. Goodbye!", "end_call")]
    guessed = _speculations()
    org = await _org(app)
    async with client_for(app) as client:
        call_id = await _place(client, org, agent_speaks_first=False, keyterms=["table", "Friday"])
        call, _ = await _until(client, org, call_id, TERMINAL, within=60)
        await sipp.finish_ok()  # our BYE (end_call) reached the phone
        data = await _recording(client, call)

    assert call["status"] == "completed"
    events = await _events(app, org, call_id)
    assert [e["data"].get("reason") for e in events if e["type"] == "call.ended"] == [
        "the agent hung up"
    ]
    user = [e for e in call["transcripts"] if e["role"] == "user"]
    assert len(user) == 1
    words = user[0]["text"].lower()
    # "four" or "4": Whisper writes numbers either way (the live window writes digits).
    assert "table" in words and ("four" in words or "4" in words) and "friday" in words, words
    roles = [(e["role"], e.get("function_name")) for e in call["transcripts"]]
    assert roles == [
        ("user", None),
        ("assistant", None),
        ("assistant", "end_call"),
        ("tool", "end_call"),
    ]
    assert call["transcripts"][1]["text"] == "Certainly, a table for four on Friday. Goodbye!"
    # Whether the brain was asked on the caller's pause depends on how fast recognition is:
    # either way the answer heard was asked with the turn's final words, its end_call ran once
    # (above), and only a discarded guess cost a request more.
    kept, discarded = (now - then for now, then in zip(_speculations(), guessed, strict=True))
    requests = brain.streamed_requests()
    assert kept <= 1 and 1 <= len(requests) <= 1 + discarded
    asked = [m["content"] for m in requests[-1]["messages"] if m["role"] == "user"]
    assert normal(asked[-1]) == normal(user[0]["text"])

    agent, far_end, _ = wav_channels(data)
    [caller_span] = _voiced_spans(far_end)
    agent_spans = _voiced_spans(agent)
    assert agent_spans, "the agent's reply was never heard"
    # The agent was silent while the caller spoke and answered after: its reply is on the line.
    assert _answered_after(agent_spans[0][0], caller_span[1]), (caller_span, agent_spans)
    assert sum(end - start for start, end in agent_spans) > 1.5


# About 25 s of speech in five sentences: whenever it starts (the brain and the first sentence's
# synthesis take seconds on a loaded machine; who answered is known after 3 s of quiet), the
# caller's sentence 14 s into the call cuts it before its last sentence has begun (a sentence
# begun is kept whole in the transcript).
OPENING = (
    "Hello, this is the Acme dental office. We are open from eight in the morning until six in "
    "the evening, Monday to Friday, and on Saturday mornings. We can book cleanings, check-ups "
    "and emergency visits. We can also send you a reminder the day before your appointment, by "
    "text or by email. If you need to cancel, please let us know a day ahead, so that someone "
    "else can have your time."
)


async def test_a_caller_who_says_uh_huh_then_speaks_over_the_agent(
    make_app: AppFactory, tmp_path: Path
) -> None:
    """One call, four behaviours in turn: "uh-huh" during the agent's long opening does not cut
    it; a real sentence does; that sentence, with a comma the smart guess takes for its end, is
    answered only once it is over; and a caller who stops to think mid-sentence is not answered
    in the pause."""
    thinking = (
        spoken("Can I speak with the") + _silence(0.5) + spoken("person who handles billing?")
    )
    audio = pcmu_file(
        _silence(9.0)
        + spoken("Uh-huh.")
        + _silence(4.0)
        + spoken("I would like to book a cleaning, please.")
        + _silence(7.0)
        + thinking,
        tmp_path,
        "caller.pcmu",
    )
    replies = [Reply("Sure, what day works for you?"), Reply("Of course. Goodbye!", "end_call")]
    with StubLLM(opening=OPENING, replies=replies) as brain:
        # Generous limits: recognition on a loaded 2-core machine can take seconds per turn.
        sipp = await start_sipp(answer_scenario(tmp_path, audio, hangup="near"), timeout_seconds=90)
        app = await _sip_app(
            make_app,
            sip_trunk=f"sip:127.0.0.1:{sipp.port}",
            llm_base_url=brain.base_url,
            llm_timeout_seconds=10,
            max_call_seconds=50,
            endpointing="model",
        )
        org = await _org(app)
        async with client_for(app) as client:
            call_id = await _place(client, org)
            call, _ = await _until(client, org, call_id, TERMINAL, within=80)
            await sipp.finish_ok()
            data = await _recording(client, call)
        asked = [r["messages"] for r in brain.streamed_requests()]

    assert call["status"] == "completed"
    lines = [e for e in call["transcripts"] if e.get("text") and e["role"] != "tool"]
    agent, far_end, _ = wav_channels(data)
    caller, spans = _voiced_spans(far_end), _voiced_spans(agent)
    said = [(e["role"], e.get("backchannel", False)) for e in lines]
    assert said == [
        ("assistant", False),
        ("user", True),  # "uh-huh": kept, marked, never answered
        ("user", False),
        ("assistant", False),
        ("user", False),
        ("assistant", False),
    ], (
        [(e["role"], e.get("backchannel"), e.get("timestamp"), e["text"][:40]) for e in lines],
        caller,
        spans,
    )
    # The opening was cut by the sentence, not by "uh-huh": it went on well past it.
    opening = lines[0]["text"]
    assert OPENING.startswith(opening) and "Saturday" in opening and opening != OPENING, (
        lines,
        caller,
        spans,
    )
    # Each caller sentence is one turn, whole (the comma and the pause did not end it), and the
    # brain was asked with it.
    # (One turn each is the list above; what Whisper heard of espeak-ng on a loaded machine may
    # be a few words off, so the words are checked loosely, tests/hearing.py.)
    sentence, question = lines[2]["text"], lines[4]["text"]
    assert heard_enough_of("I would like to book a cleaning, please.", sentence), sentence
    # (Speculative requests may come on top, on a pause's words: not counted.)
    backchannel = lines[1]["text"]
    users = [[m["content"] for m in r if m["role"] == "user"] for r in asked]
    assert not any(backchannel in said for said in users), users  # never sent to the brain
    assert any(said and said[-1] == sentence for said in users), users
    assert any(said and said[-1] == question for said in users), users
    assert lines[3]["text"] == "Sure, what day works for you?"

    assert len(caller) == 3, caller
    (_, uh_huh_ends), (sentence_starts, sentence_ends), (thinking_starts, thinking_ends) = caller
    # The agent was heard again after "uh-huh", before the sentence that cut it.
    assert any(s < sentence_starts and e > uh_huh_ends + 1.0 for s, e in spans), (caller, spans)
    # It stopped while the caller spoke, and answered each sentence only after its end (the
    # spans are in the messages, to tell a slow machine from an early answer).
    after = [s for s, _ in spans if s > sentence_starts]
    assert after and _answered_after(after[0], sentence_ends), (caller, spans)
    assert not any(s < sentence_ends and e > sentence_starts + 1.0 for s, e in spans), spans
    later = [s for s, _ in spans if s > thinking_starts]
    assert later and _answered_after(later[0], thinking_ends), (caller, spans)


async def _org(app: Any) -> Any:
    from tests.factories import make_org

    return await make_org(app)


async def _events(app: Any, org: Any, call_id: str) -> list[Any]:
    async with client_for(app) as client:
        response = await client.get(f"/v1/calls/{call_id}/events", headers=org.headers)
    events: list[Any] = response.json()["events"]
    return events
