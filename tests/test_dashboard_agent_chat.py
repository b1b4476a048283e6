"""The agent page as a studio (issue 40): a test chat beside the editor, through the same turn as
``POST /v1/agents/{uuid}/conversations``; the first commit shown as the configuration."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.agents_support import create_agent
from tests.conftest import client_for
from tests.dashboard_support import browser_client, csrf_of, make_person, sign_in
from tests.factories import make_org
from tests.llm_stub import StubLLM

_SAID = re.compile(r'name="said" value="([^"]*)"')


def _said(page: str) -> str:
    found = _SAID.search(page)
    assert found is not None
    return found.group(1).replace("&#34;", '"').replace("&quot;", '"').replace("&#39;", "'")


async def test_the_test_chat_talks_with_the_branch(make_app: Any) -> None:
    with StubLLM(replies=["Friday at nine is free."]) as brain:
        app = await make_app(worker="off", llm_base_url=brain.base_url, llm_model="stub")
        org = await make_org(app)
        async with client_for(app) as client:
            agent = await create_agent(
                client, org, {"first_message": "Hi, Riley here.", "language": "en-GB"}
            )
        person = await make_person(app, org)
        async with browser_client(app) as browser:
            await sign_in(browser, person.email, person.password)
            page = await browser.get(f"/dashboard/agents/{agent['id']}")
            token = csrf_of(page)
            url = f"/dashboard/agents/{agent['id']}/chat"
            opened = await browser.post(url, data={"csrf_token": token, "branch": "main"})
            answered = await browser.post(
                url,
                data={
                    "csrf_token": token,
                    "branch": "main",
                    "said": _said(opened.text),
                    "text": "Can I come on Friday?",
                },
            )
    assert "Test chat with main" in page.text and 'value="en-GB"' in page.text
    assert "The first configuration" in page.text
    assert opened.status_code == 200 and "Hi, Riley here." in opened.text
    assert answered.status_code == 200
    text = answered.text
    assert text.index("Hi, Riley here.") < text.index("Can I come on Friday?")
    assert text.index("Can I come on Friday?") < text.index("Friday at nine is free.")
    assert json.loads(_said(text))[-1] == {"role": "assistant", "text": "Friday at nine is free."}


async def test_without_a_brain_the_chat_says_how_to_get_one(make_app: Any) -> None:
    app = await make_app(worker="off", llm_discover_ports="")
    org = await make_org(app)
    async with client_for(app) as client:
        agent = await create_agent(client, org, {"first_message": "Hi."})
    person = await make_person(app, org)
    async with browser_client(app) as browser:
        await sign_in(browser, person.email, person.password)
        page = await browser.get(f"/dashboard/agents/{agent['id']}")
        said = '[{"role": "assistant", "text": "Hi."}]'
        answer = await browser.post(
            f"/dashboard/agents/{agent['id']}/chat",
            data={"csrf_token": csrf_of(page), "branch": "main", "said": said, "text": "Hello"},
        )
    assert answer.status_code == 200
    assert "Give the agent a brain" in answer.text and "Hello" in answer.text


async def test_the_editor_plays_the_agents_voice(make_app: Any) -> None:
    app = await make_app(worker="off")
    org, other = await make_org(app), await make_org(app, "Other")
    async with client_for(app) as client:
        made = await client.post(
            "/v1/voices", headers=org.headers, json={"name": "Ed", "engine": "espeak-ng:en-us"}
        )
        assert made.status_code == 201, made.text
        voice_id = made.json()["id"]
        agent = await create_agent(client, org, {"first_message": "Hi.", "voice_id": voice_id})
    person, stranger = await make_person(app, org), await make_person(app, other)
    async with browser_client(app) as browser:
        await sign_in(browser, person.email, person.password)
        page = (await browser.get(f"/dashboard/agents/{agent['id']}")).text
        heard = await browser.get(f"/dashboard/voices/{voice_id}/preview")
    async with browser_client(app) as browser:
        await sign_in(browser, stranger.email, stranger.password)
        theirs = await browser.get(f"/dashboard/voices/{voice_id}/preview")
    assert f'src="/dashboard/voices/{voice_id}/preview"' in page
    assert heard.status_code == 200 and heard.headers["content-type"] == "audio/wav"
    assert heard.content[:4] == b"RIFF" and len(heard.content) > 8000
    assert theirs.status_code == 404
