"""An agent's ``redaction`` over HTTP (docs/privacy.md#redaction): a text turn, a call over the
simulated network whose transcript, events and signed webhooks carry ``[credit_card]`` and never
the digits, the counts on the dashboard's call page, and configs that are refused."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from standardwebhooks.webhooks import Webhook

from tests.agents_support import create_agent
from tests.conftest import client_for
from tests.dashboard_support import browser_client, make_person, sign_in
from tests.engine_support import create_call, engine_app, events_of, wait_for_call
from tests.factories import make_org
from tests.llm_stub import Reply, StubLLM
from tests.test_voices_calls import PUBLIC, _channels
from tests.webhook_receiver import receiver

CARD = "4111 1111 1111 1111"
#: The card however it is written (ids and signatures may hold "1111" by chance).
WRITTEN = re.compile(r"4111[ -]?1111")


def clean(text: str) -> bool:
    return WRITTEN.search(text) is None


@pytest.fixture
def llm() -> Iterator[StubLLM]:
    with StubLLM(
        opening="Hi, this is Acme billing.",
        replies=[Reply(f"I have your card {CARD} on file.", "charge", {"card": CARD})],
        after_tool=[f"Charged {CARD}, thanks!"],
        summary=f"The caller paid with card {CARD}.",
    ) as stub:
        yield stub


@pytest.mark.parametrize("llm_redacted", [False, True], ids=["brain-hears", "llm"])
async def test_a_text_turn_is_redacted_and_llm_hides_the_value_from_the_brain(
    make_app: Any, llm: StubLLM, llm_redacted: bool
) -> None:
    app = await make_app(llm_base_url=llm.base_url)
    org = await make_org(app)
    config = {"redaction": {"entities": ["credit_card"], "llm": llm_redacted}}
    async with client_for(app) as client:
        agent = await create_agent(client, org, config)
        response = await client.post(
            f"/v1/agents/{agent['id']}/conversations",
            headers=org.headers,
            json={"messages": [{"role": "user", "text": f"My card is {CARD}."}]},
        )
    assert response.status_code == 200, response.text
    entries = response.json()["entries"]
    assert entries[0] == {"role": "assistant", "text": "I have your card [credit_card] on file."}
    assert entries[1]["arguments"] == {"card": "[credit_card]"}
    assert clean(orjson.dumps(entries).decode())
    said = [m for m in llm.streamed_requests()[0]["messages"] if m["role"] == "user"]
    if llm_redacted:
        assert said == [{"role": "user", "content": "My card is [credit_card]."}]
    else:
        assert said == [{"role": "user", "content": f"My card is {CARD}."}]


async def test_a_call_stores_and_sends_only_the_token(make_app: Any, llm: StubLLM) -> None:
    app = await engine_app(
        make_app,
        llm_base_url=llm.base_url,
        llm_model="stub",
        webhook_allow_private_networks=True,
    )
    org = await make_org(app)
    person = await make_person(app, org)
    script = [{"say": f"My card is {CARD}.", "after_ms": 500}, {"say": "Bye.", "after_ms": 500}]
    async with receiver() as hooks, client_for(app) as client:
        hook = await client.post("/v1/webhooks", json={"url": hooks.url}, headers=org.headers)
        assert hook.status_code == 201, hook.text
        secret = hook.json()["webhook"]["secret"]
        agent = await create_agent(
            client,
            org,
            {
                "first_message": "Hi.",
                "redaction": {"entities": ["credit_card", "email"], "recordings": True},
            },
        )
        call_id = await create_call(
            client, org, "+14155550123", agent_id=agent["id"], simulate={"script": script}
        )
        delivery = await hooks.wait_for_event("call.analyzed", within=30)
        call = await wait_for_call(client, org, call_id)
        events = await events_of(client, org, call_id)
        deliveries = list(hooks.received)
        url = call["recording_presigned_url"]
        audio = await client.get(url.removeprefix(PUBLIC))
    said = [e["text"] for e in call["transcripts"] if e["role"] == "user"]
    assert "My card is [credit_card]." in said
    agent_lines = [e.get("text") for e in call["transcripts"] if e["role"] == "assistant"]
    assert "I have your card [credit_card] on file." in agent_lines
    assert clean(orjson.dumps(call["transcripts"]).decode())
    assert call["summary"] == "The caller paid with card [credit_card]."
    assert clean(orjson.dumps(events).decode())
    # Every signed delivery (dialing … analyzed) carries the call as stored.
    assert len(deliveries) >= 3
    for received in deliveries:
        body = Webhook(secret).verify(received.body, received.headers)
        assert clean(received.body.decode()), body["type"]
    analyzed = Webhook(secret).verify(delivery.body, delivery.headers)
    assert "[credit_card]" in orjson.dumps(analyzed["data"]["call"]["transcripts"]).decode()

    # ``recordings``: the person's card line is a steady 1 kHz tone in the stored audio (a
    # period of 8 samples at 8 kHz), the agent's side of it left alone.
    assert audio.status_code == 200
    _agent, far_end = _channels(audio.content)
    # Where in the line depends on whether its words were placed when heard again after the
    # call (docs/privacy.md#redaction): the whole line, or from the card on.
    [line] = [e for e in call["transcripts"] if e.get("text") == "My card is [credit_card]."]
    start = int(line["timestamp"] * 8000)
    stretches = [far_end[at : at + 800] for at in range(start, start + 10 * 8000, 400)]
    assert any(
        max(stretch) > 7000
        and all(abs(a - b) < 200 for a, b in zip(stretch, stretch[8:], strict=False))
        for stretch in stretches
    )

    # The call page shows what was replaced, by entity, never the values.
    async with browser_client(app) as browser:
        await sign_in(browser, person.email, person.password)
        page = await browser.get(f"/dashboard/calls/{call_id}")
    assert page.status_code == 200
    assert 'aria-label="Redacted"' in page.text and "[credit_card]</code> × " in page.text
    assert "[email]" not in page.text and clean(page.text)


@pytest.mark.parametrize(
    ("redaction", "says"),
    [
        pytest.param({"entities": ["passport"]}, "unknown entity: passport", id="unknown"),
        pytest.param({"entities": "email"}, "config/redaction/entities", id="not-a-list"),
        pytest.param({"entities": [], "audio": True}, "config/redaction/audio", id="unknown-key"),
        pytest.param({"llm": "yes"}, "config/redaction/llm", id="not-a-bool"),
    ],
)
async def test_a_bad_redaction_is_422_naming_it(app: Any, client: Any, redaction, says) -> None:
    org = await make_org(app)
    response = await client.post(
        "/v1/agents", headers=org.headers, json={"name": "a", "config": {"redaction": redaction}}
    )
    assert response.status_code == 422, response.text
    assert says in response.json()["error"]
