"""A simulated call scripted per call (``POST /calls`` ``simulate``) that tells the truth: what
the person says and when, and a call whose duration, transcript times and recording agree (the
times are positions in the recording)."""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import client_for
from tests.engine_support import create_call, engine_app, events_of, wait_for_call
from tests.factories import make_org
from tests.llm_stub import Reply, StubLLM
from tests.sipp_peer import rms
from tests.test_calls_helpers import assert_status_error, count_calls
from tests.test_voices_calls import PUBLIC, _channels

SCRIPT = [
    {"say": "Where is my order forty-two?", "after_ms": 2500},
    {"say": "Thanks, that is all.", "after_ms": 1500},
]


@pytest.fixture
def brain() -> Iterator[StubLLM]:
    with StubLLM(
        opening="Hi, this is Acme.",
        # However the lines fall into turns, the agent's first answer uses a tool.
        replies=[Reply("Let me look.", "lookup", {"order": "42"})],
        after_tool=["It has shipped."],
    ) as server:
        yield server


def _loud_at(track: list[int], seconds: float, span: float = 0.5) -> bool:
    start = int(seconds * 8000)
    frames = [track[i : i + 160] for i in range(start, start + int(span * 8000) - 159, 160)]
    return any(rms(f) > 330 for f in frames)


async def test_a_scripted_call_says_its_lines_and_its_times_are_the_recordings(
    make_app: Any, brain: StubLLM
) -> None:
    app = await engine_app(make_app, llm_base_url=brain.base_url, llm_model="stub")
    org = await make_org(app)
    async with client_for(app) as client:
        call_id = await create_call(client, org, "+14155550123", simulate={"script": SCRIPT})
        call = await wait_for_call(client, org, call_id, within=30)
        url = call["recording_presigned_url"]
        audio = await client.get(url.removeprefix(PUBLIC)) if url else None
    assert call["status"] == "completed"
    transcript = call["transcripts"]
    said = [e["text"] for e in transcript if e["role"] == "user"]
    assert said == ["Hello?", *(line["say"] for line in SCRIPT)]
    assert "lookup" in [e.get("function_name") for e in transcript]
    stamps = [e["timestamp"] for e in transcript]
    assert stamps == sorted(stamps)
    # Each scripted line comes at least its after_ms after the agent's line before it began.
    for line in SCRIPT:
        [mine] = [e for e in transcript if e.get("text") == line["say"]]
        before = [e for e in transcript if e["role"] == "assistant" and e.get("text")]
        before = [e for e in before if e["timestamp"] <= mine["timestamp"]][-1]
        assert mine["timestamp"] - before["timestamp"] >= line["after_ms"] / 1000
    # The call lasts as long as its recording, and every line is inside it.
    assert audio is not None and audio.status_code == 200
    agent, person = _channels(audio.content)
    seconds = len(agent) / 8000
    assert call["duration"] == math.floor(seconds + 0.5)  # whole seconds, rounded
    assert stamps[-1] <= seconds
    assert call["duration"] >= 1 + sum(line["after_ms"] for line in SCRIPT) // 1000
    if shutil.which("espeak-ng"):
        for entry in transcript:
            if entry["role"] in ("user", "assistant") and entry.get("text"):
                track = person if entry["role"] == "user" else agent
                assert _loud_at(track, entry["timestamp"]), entry


async def test_without_a_script_of_its_own_the_call_is_as_before(make_app: Any) -> None:
    app = await engine_app(make_app, simulated_call_seconds=0.5)
    org = await make_org(app)
    async with client_for(app) as client:
        call_id = await create_call(client, org, "+14155550123", first_message="Hi there.")
        call = await wait_for_call(client, org, call_id)
    lines = [(e["role"], e["text"]) for e in call["transcripts"]]
    assert lines[:2] == [("assistant", "Hi there."), ("user", "Hello?")] or lines[:2] == [
        ("user", "Hello?"),
        ("assistant", "Hi there."),
    ]
    assert all(e["timestamp"] <= call["duration"] + 1 for e in call["transcripts"])


@pytest.mark.parametrize(
    ("simulate", "says"),
    [
        pytest.param({"script": []}, "simulate", id="empty"),
        pytest.param({"script": [{"say": ""}]}, "simulate", id="blank-line"),
        pytest.param({"script": [{"say": "Hi", "after_ms": -1}]}, "simulate", id="negative"),
        pytest.param({"script": [{"say": "Hi", "after_ms": "500"}]}, "simulate", id="text-ms"),
        pytest.param({"script": [{"say": "Hi", "when": 3}]}, "simulate", id="unknown-key"),
        pytest.param({"script": ["Hi"]}, "simulate", id="bare-string"),
        pytest.param({"lines": []}, "simulate", id="unknown-field"),
        pytest.param("yes", "simulate", id="not-an-object"),
    ],
)
async def test_a_bad_script_is_422_naming_it(app: Any, client: Any, simulate: Any, says: str):
    org = await make_org(app)
    response = await client.post(
        "/v1/calls",
        headers=org.headers,
        json={"to_number": "+14155550123", "simulate": simulate},
    )
    error = assert_status_error(response, 422)
    assert error["error"].startswith(says)
    assert await count_calls(app, org.id) == 0


async def test_a_script_on_another_network_is_422(make_app: Any) -> None:
    app = await make_app(telephony="sip", worker="off")
    org = await make_org(app)
    async with client_for(app) as client:
        response = await client.post(
            "/v1/calls",
            headers=org.headers,
            json={"to_number": "+14155550123", "simulate": {"script": [{"say": "Hi"}]}},
        )
    error = assert_status_error(response, 422)
    assert error["error"].startswith("simulate") and "simulated network" in error["error"]
    assert await count_calls(app, org.id) == 0


async def test_a_scripted_call_is_answered_when_llama_cpp_python_drops_a_reply(
    make_app: Any,
) -> None:
    """llama-cpp-python's server ends a streamed reply early, with no text and no
    ``finish_reason``, when another request waits behind it: asked again, not taken for an
    empty answer that leaves the caller to the silence timeout (docs/brains.md)."""
    with StubLLM(replies=["Friday at nine is free."], llama_cpp=True, cut_first=1) as server:
        app = await engine_app(make_app, llm_base_url=server.base_url, simulated_call_seconds=0.5)
        org = await make_org(app)
        async with client_for(app) as client:
            call_id = await create_call(
                client,
                org,
                "+14155550123",
                first_message="Hi, this is Riley.",
                simulate={"script": [{"say": "Hi, can I come in on Friday?"}]},
            )
            call = await wait_for_call(client, org, call_id, within=20)
            events = await events_of(client, org, call_id)
    assert call["status"] == "completed"
    said = [e["text"] for e in call["transcripts"] if e["role"] == "assistant"]
    assert said == ["Hi, this is Riley.", "Friday at nine is free."]
    types = [e["type"] for e in events]
    assert "agent.silence_timeout" not in types and "agent.brain_error" not in types
