"""The agent on a real SIP call (SIPp on loopback as the phone): the caller's espeak-ng speech
is recognised, the brain's reply is heard on the line, and a caller who speaks over the agent
cuts its line short (barge-in)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from callplane.engine.conversation.speculation import normal
from callplane.speech.synthesis import EspeakSynthesizer
from tests.conftest import AppFactory, client_for
from tests.llm_stub import Reply, StubLLM
from tests.sipp_peer import answer_scenario, pcmu_file, requires_sipp, start_sipp, wav_channels
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
    assert agent_spans[0][0] >= caller_span[1]
    assert sum(end - start for start, end in agent_spans) > 1.5


async def test_a_caller_who_speaks_over_the_agent_cuts_its_line(
    make_app: AppFactory, tmp_path: Path, brain: StubLLM
) -> None:
    first = _speech("Hello, can you hear me?")
    second = _speech("Sorry, I have to go now.")
    # The second line starts 11 s after the first ends: well inside the agent's long reply
    # (about 18 s of speech) whether recognition takes a fraction of a second or several.
    audio = pcmu_file(_silence(0.3) + first + _silence(11.0) + second, tmp_path, "caller.pcmu")
    # Generous limits: recognition on a loaded 2-core machine can take seconds per turn.
    sipp = await start_sipp(answer_scenario(tmp_path, audio, hangup="near"), timeout_seconds=90)
    app = await _sip_app(
        make_app,
        sip_trunk=f"sip:127.0.0.1:{sipp.port}",
        llm_base_url=brain.base_url,
        llm_timeout_seconds=10,
        max_call_seconds=40,
    )
    org = await _org(app)
    async with client_for(app) as client:
        call_id = await _place(client, org, agent_speaks_first=False)
        call, _ = await _until(client, org, call_id, TERMINAL, within=60)
        await sipp.finish_ok()
        data = await _recording(client, call)

    assert call["status"] == "completed"
    lines = [e for e in call["transcripts"] if e.get("text") and e["role"] != "tool"]
    assert [e["role"] for e in lines] == ["user", "assistant", "user", "assistant"]
    cut = lines[1]["text"]
    # The transcript keeps what the caller heard: the start of the reply, not all of it.
    assert LONG_REPLY.startswith(cut) and len(cut) < len(LONG_REPLY)
    assert lines[3]["text"] == "Of course. Goodbye!"

    agent, far_end, _ = wav_channels(data)
    caller_spans = _voiced_spans(far_end)
    assert len(caller_spans) == 2
    second_starts, second_ends = caller_spans[1]
    agent_spans = _voiced_spans(agent)
    # The agent's line the caller spoke over (on a slow machine the reply may even start while
    # the caller already speaks); the spans are in the message, to tell a late reply from an
    # early cut should this ever fail.
    overlapping = [s for s in agent_spans if s[0] < second_ends and second_starts < s[1] + 0.3]
    assert len(overlapping) == 1, (caller_spans, agent_spans, call["transcripts"])
    [talking_over] = overlapping
    # Cut within a second of the caller starting to speak, long before the reply's end.
    assert talking_over[1] < max(second_starts, talking_over[0]) + 1.2
    assert talking_over[1] - talking_over[0] < len(_speech(LONG_REPLY)) / 2 / RATE - 2


async def _org(app: Any) -> Any:
    from tests.factories import make_org

    return await make_org(app)


async def _events(app: Any, org: Any, call_id: str) -> list[Any]:
    async with client_for(app) as client:
        response = await client.get(f"/v1/calls/{call_id}/events", headers=org.headers)
    events: list[Any] = response.json()["events"]
    return events
