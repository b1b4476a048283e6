"""Audio mode with the real recogniser: each caller line is spoken (espeak-ng here) into the
phone call's own listener, end of turn and Whisper, the agent's replies are recognised back, and
each reply's latency is kept and checked against max_reply_ms."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.agent_tests_support import add_test, finished, start_run
from tests.agents_support import create_agent
from tests.factories import make_org
from tests.hearing import heard_enough_of, words
from tests.llm_stub import StubLLM


@pytest.fixture
def llm() -> Iterator[StubLLM]:
    with StubLLM(replies=["Monday at nine works for your cleaning."]) as stub:
        yield stub


@pytest.fixture
async def app(make_app: Any, llm: StubLLM) -> Any:
    return await make_app(llm_base_url=llm.base_url, worker="embedded", worker_poll_seconds=0.05)


@pytest.mark.slow
@pytest.mark.realtime
async def test_an_audio_run_hears_the_agent_and_keeps_each_reply_latency(app, client, llm):
    org = await make_org(app)
    agent = await create_agent(
        client, org, {"prompt": "Book cleanings.", "first_message": "Hello, Bright Smiles."}
    )
    await add_test(
        client,
        org,
        agent["id"],
        name="spoken",
        turns=[{"user": "I would like a cleaning on Monday please."}],
        expect={"said": ["(?i)cleaning", "(?i)tuesday"], "max_reply_ms": 1},
    )
    run = await start_run(client, org, agent["id"], mode="audio")
    assert run["mode"] == "audio"
    done = await finished(client, org, agent["id"], run["id"], within=240)
    assert done["status"] == "failed", done
    [repetition] = done["results"][0]["runs"]
    [latency] = repetition["reply_ms"]
    assert latency > 1
    # The reply was heard (a cleaning), not a Tuesday; and no reply comes within 1 ms.
    said, slow = repetition["failures"]
    assert said.startswith(
        'expect.said.1: /(?i)tuesday/: expected the agent to say it, it was heard saying "'
    )
    assert heard_enough_of("Monday at nine works for your cleaning.", said), said
    assert slow == f"expect.max_reply_ms: every reply within 1 ms, replies took {latency} ms"
    heard_caller = " ".join(
        e["text"].lower() for e in repetition["transcript"] if e["role"] == "user"
    )
    # The caller's line was heard and kept. Which words: on a loaded machine Whisper has heard
    # espeak-ng's "a cleaning on Monday please" as "fly, kathleen on my main plane".
    assert words(heard_caller), heard_caller
    spoken = [e["text"] for e in repetition["transcript"] if e["role"] == "assistant"]
    assert spoken[0] == "Hello, Bright Smiles."
    assert "Monday at nine works for your cleaning." in spoken
