"""The agent holds the conversation (docs/engine-core.md) over the simulated network, with a local
OpenAI-compatible stub as its brain: turns, tool calls, the transcript, the summary, analyzers
and the call.analyzed webhook; and a brain that is down or silent never hangs a call."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook

from callplane.engine.conversation.turn_loop import APOLOGY
from tests.conftest import client_for
from tests.engine_support import (
    create_call,
    engine_app,
    events_of,
    wait_for_call,
    wait_for_event,
)
from tests.factories import make_org
from tests.llm_stub import Reply, StubLLM
from tests.webhook_receiver import receiver

SCRIPT = [
    "I need to move my appointment, please.",
    "Friday morning would be best.",
    "No, that's all. Thanks!",
]
SENTIMENT = {
    "type": "object",
    "properties": {"sentiment": {"type": "string", "enum": ["positive", "neutral", "negative"]}},
    "required": ["sentiment"],
}
BOOKED = {
    "type": "object",
    "properties": {"booked": {"type": "boolean"}},
    "required": ["booked"],
}


@pytest.fixture
def brain() -> Iterator[StubLLM]:
    # The caller's "Hello?" and first line both arrive before the agent can answer the first
    # (they are already queued when the opening line ends): the agent answers them together,
    # so the first reply is the one for two user messages.
    with StubLLM(
        replies=[
            "(never said: interrupted by the caller's next line)",
            "Of course. Which day suits you?",
            Reply("Let me check Friday. Friday at nine is free.", "find_slot", {"day": "Friday"}),
            Reply("You're welcome, goodbye!", "end_call", {"reason": "caller is done"}),
        ],
        summary="The caller moved their appointment to Friday at nine.",
        analyses=["Sure! The caller sounded happy.", '{"sentiment": "positive"}', "{}", "[]"],
    ) as server:
        yield server


async def test_a_three_turn_conversation_is_transcribed_summarised_and_analyzed(
    make_app: Any, brain: StubLLM
) -> None:
    app = await engine_app(
        make_app,
        simulated_call_seconds=20,
        simulated_script=SCRIPT,
        llm_base_url=brain.base_url,
        llm_model="stub-model",
        llm_timeout_seconds=5,
        webhook_allow_private_networks=True,
    )
    org = await make_org(app)
    async with receiver() as hooks, client_for(app) as client:
        hook = await client.post(
            "/v1/webhooks",
            json={"url": hooks.url, "events": ["call.analyzed"]},
            headers=org.headers,
        )
        assert hook.status_code == 201, hook.text
        secret = hook.json()["webhook"]["secret"]
        call_id = await create_call(
            client,
            org,
            "+14155550123",
            first_message="Hi, this is Ada from Bright Smiles.",
            call_prompt="You are Ada, the receptionist of Bright Smiles dental practice.",
            analyzers=[
                {"prompt": "How did the caller feel?", "output_config": SENTIMENT},
                {"prompt": "Was an appointment booked?", "output_config": BOOKED},
            ],
        )
        delivery = await hooks.wait_for_event("call.analyzed", within=30)
        call = await wait_for_call(client, org, call_id)
        events = await events_of(client, org, call_id)

    # The agent ended the call itself (end_call; call.ended's reason, below).
    assert call["status"] == "completed"
    transcript = call["transcripts"]
    # find_slot is no tool of this agent: the brain is told so. The caller's next line is said
    # the moment the agent's line is played, so it races the tool call and its answer, and the
    # brain's line after them ("Done."), which it supersedes when first.
    lines = [
        (e["role"], e.get("text") or e.get("function_name"))
        for e in transcript
        if e.get("text") != "Done."
    ]
    # The call was asked for in the line: it follows the line, before the caller's answer to it
    # (recorded first or not).
    assert lines[6] == ("assistant", "find_slot"), lines
    racing = lines[6:9]
    assert ("user", SCRIPT[2]) in racing, lines
    racing.remove(("user", SCRIPT[2]))
    lines[6:9] = [*racing, ("user", SCRIPT[2])]
    lines[7:9] = sorted(lines[7:9], reverse=True)
    assert lines == [
        ("assistant", "Hi, this is Ada from Bright Smiles."),
        ("user", "Hello?"),
        ("user", SCRIPT[0]),
        ("assistant", "Of course. Which day suits you?"),
        ("user", SCRIPT[1]),
        ("assistant", "Let me check Friday. Friday at nine is free."),
        ("assistant", "find_slot"),
        ("user", SCRIPT[2]),
        ("tool", '{"error":"there is no tool \'find_slot\'; tools: end_call, opt_out"}'),
        ("assistant", "You're welcome, goodbye!"),
        ("assistant", "end_call"),
        ("tool", '{"ended":true}'),
    ], [(e["role"], e.get("text") or e.get("function_name"), e["timestamp"]) for e in transcript]
    calls = [e for e in transcript if e.get("function_name") and e["role"] == "assistant"]
    assert [c["arguments"] for c in calls] == [{"day": "Friday"}, {"reason": "caller is done"}]
    stamps = [e["timestamp"] for e in transcript]
    assert stamps == sorted(stamps) and stamps[0] >= 0 and stamps[-1] <= call["duration"] + 1

    # The brain was told the call's prompt and the conversation so far, tool calls included.
    last = brain.streamed_requests()[-1]
    assert last["model"] == "stub-model" and last["tools"][0]["function"]["name"] == "end_call"
    messages = last["messages"]
    assert messages[0] == {"role": "system", "content": call["call_prompt"]}
    tool_call = next(m for m in messages if m.get("tool_calls"))
    assert tool_call["tool_calls"][0]["function"]["name"] == "find_slot"
    assert messages[messages.index(tool_call) + 1]["role"] == "tool"
    # The caller's last line is the last thing they said to it ("Done." may follow it: the race
    # above, ordered by when each line began).
    said = [m for m in messages if m["role"] == "user"]
    assert said[-1] == {"role": "user", "content": SCRIPT[2]}
    assert messages[-1] in (said[-1], {"role": "assistant", "content": "Done."})

    assert call["summary"] == "The caller moved their appointment to Friday at nine."
    feeling, booked = call["analysis_results"]
    assert [feeling["prompt"], booked["prompt"]] == [a["prompt"] for a in call["analyzers"]]
    assert feeling["analyzer_id"] == call["analyzers"][0]["id"]
    assert feeling["result"] == {"sentiment": "positive"}  # the prose answer was retried
    assert feeling["output_config"] == SENTIMENT
    assert booked["result"] is None and "invalid twice" in booked["error"]

    events = [e for e in events if e["type"] != "agent.turn_latency"]  # issue 29's, per turn
    types = [e["type"] for e in events]
    assert types[:4] == ["call.dialing", "call.in_progress", "tool.called", "tool.called"]
    assert [e["data"]["name"] for e in events[2:4]] == ["find_slot", "end_call"]
    assert [e["data"]["outcome"] for e in events[2:4]] == ["unknown_tool", "ok"]
    assert types[4] == "call.ended"
    assert events[4]["data"]["reason"] == "the agent hung up"
    assert types[-1] == "call.analyzed"
    analyzed = events[-1]["data"]
    assert analyzed["summary_by"] == "brain" and analyzed["analysis_errors"] == 1
    assert len(analyzed["response_latency_ms"]) == 3

    body = Webhook(secret).verify(delivery.body, delivery.headers)
    assert body["data"]["call"]["id"] == call_id
    assert body["data"]["call"]["summary"] == call["summary"]
    assert body["data"]["call"]["analysis_results"] == call["analysis_results"]
    assert body["data"]["sequence"] == events[-1]["sequence"]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize("failure", ["down", "silent"])
async def test_a_failing_brain_gets_an_apology_and_the_call_still_completes(
    make_app: Any, failure: str
) -> None:
    with StubLLM(mode="hang") as silent:
        url = silent.base_url if failure == "silent" else f"http://127.0.0.1:{_closed_port()}/v1"
        app = await engine_app(
            make_app,
            simulated_call_seconds=20,
            llm_base_url=url,
            llm_timeout_seconds=0.5,
        )
        org = await make_org(app)
        async with client_for(app) as client:
            call_id = await create_call(
                client,
                org,
                "+14155550124",
                agent_speaks_first=False,
                analyzers=[{"prompt": "Mood?", "output_config": SENTIMENT}],
            )
            call = await wait_for_call(client, org, call_id, within=10)
            events = await wait_for_event(client, org, call_id, "call.analyzed")

    assert call["status"] == "completed"  # the agent hung up (call.ended, below)
    assert [(e["role"], e["text"]) for e in call["transcripts"]] == [
        ("user", "Hello?"),
        ("assistant", APOLOGY),
    ]
    [error] = [e for e in events if e["type"] == "agent.brain_error"]
    expected = "could not reach" if failure == "down" else "within 0.5 s"
    assert expected in error["data"]["error"]
    types = [e["type"] for e in events]
    assert types.index("agent.brain_error") < types.index("call.ended")
    assert events[types.index("call.ended")]["data"]["reason"] == "the agent hung up"
    analyzed = events[-1]["data"]
    assert analyzed["summary_by"] == "extractive" and analyzed["analysis_errors"] == 1
