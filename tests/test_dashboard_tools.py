"""The dashboard's view of tools: a call's tool uses and transfer inline in its transcript (a real
call on the simulated network, the stub brain asking for the tools, a real local receiver
answering the function tool with hostile markup), and the agent editor's tools validated by
the API's own rules before anything is committed."""

from __future__ import annotations

import html
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from tests.conftest import client_for
from tests.dashboard_support import browser_client, csrf_of, make_person, sign_in
from tests.factories import make_org
from tests.llm_stub import Reply, StubLLM
from tests.test_tools_calls import agent_calls, place
from tests.webhook_receiver import Reply as HookReply
from tests.webhook_receiver import receiver

HOSTILE = "<script>alert('pwned')</script>"


async def test_a_call_page_shows_tool_uses_and_the_transfer_escaped(make_app: Any) -> None:
    async with receiver(
        lambda _n: HookReply(headers={"content-type": "text/plain"}, body=HOSTILE.encode())
    ) as endpoint:
        config = {
            "tools": [
                {
                    "type": "function",
                    "name": "lookup_order",
                    "url": endpoint.url,
                    "parameters": {
                        "type": "object",
                        "properties": {"order_id": {"type": "string"}},
                    },
                },
                {
                    "type": "transfer_call",
                    "destinations": [
                        {"name": "sales", "number": "+14155550100", "handoff_provider": "genesys"}
                    ],
                },
            ]
        }
        brain = StubLLM(
            replies=[Reply("", "lookup_order", {"order_id": "<b>42</b>"})],
            after_tool=[Reply("", "transfer_call", {"destination": "sales"}), "Done."],
        )
        with brain:
            async with agent_calls(
                make_app, brain, config, script=["Where is my order?"], secret="whsec_" + "a" * 32
            ) as app:
                org = await make_org(app)
                async with client_for(app) as client:
                    call, events = await place(client, org, "+14155550160")
                person = await make_person(app, org)
                async with browser_client(app) as browser:
                    assert (
                        await sign_in(browser, person.email, person.password)
                    ).status_code == 303
                    page = await browser.get(f"/dashboard/calls/{call['id']}")
    assert page.status_code == 200, page.text[:500]
    assert call["transferred"] is True, call
    raw, text = page.text, html.unescape(page.text)
    # The receiver's markup and the brain's arguments are shown as text, never as markup.
    assert "<script>alert" not in raw and "<b>42</b>" not in raw
    assert "&lt;script&gt;alert(" in raw
    assert HOSTILE in text
    assert "<dt>order id</dt><dd><b>42</b></dd>" in text  # the arguments, as fields
    called = {e["data"]["name"]: e["data"] for e in events if e["type"] == "tool.called"}
    for name in ("lookup_order", "transfer_call"):
        assert called[name]["outcome"] == "ok"
        assert f"{called[name]['duration_seconds']:.3f} s" in text
    assert 'class="badge ok"' in raw
    transferred = next(e for e in events if e["type"] == "call.transferred")
    assert "Transferred to <strong>sales</strong> (cold)" in text
    assert call["screen_pop_token"] in text
    assert transferred["data"]["screen_pop_token"] == call["screen_pop_token"]
    handoff = call["handoff_metadata"]["genesys"]
    assert (
        "Handoff metadata for <strong>genesys</strong>" in text
        and handoff["conversation_id"] in text
    )
    # The transfer sits right after the tool answer that made it.
    answer = text.index('"transferred": true')
    assert answer < text.index("Transferred to <strong>") < text.index("<h2>Events</h2>")


@pytest.fixture
async def editor(app: Any) -> AsyncIterator[tuple[Any, str]]:
    """A signed-in browser client and an agent with one function tool."""
    org = await make_org(app)
    person = await make_person(app, org)
    async with client_for(app) as api:
        made = await api.post(
            "/v1/agents",
            headers=org.headers,
            json={"name": "Riley", "config": {"prompt": "Be kind.", "tools": [LOOKUP]}},
        )
        assert made.status_code == 201, made.text
    async with browser_client(app) as browser:
        assert (await sign_in(browser, person.email, person.password)).status_code == 303
        yield browser, made.json()["agent"]["id"]


LOOKUP = {
    "type": "function",
    "name": "lookup_order",
    "url": "https://example.com/orders",
    "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}},
}


def _form(page: Any, tools: str, message: str = "Tools changed") -> dict[str, str]:
    return {
        "csrf_token": csrf_of(page),
        "branch": "main",
        "prompt": "Be kind.",
        "tools": tools,
        "settings": "{}",
        "message": message,
    }


async def _history(browser: Any, agent_id: str) -> str:
    page = await browser.get(f"/dashboard/agents/{agent_id}")
    assert page.status_code == 200
    return html.unescape(page.text)


BAD_TOOLS = {
    "[{": "Tools: not valid JSON (line 1, column 3",
    '{"type": "end_call"}': "config/tools: ",
    '[{"type": "teleport"}]': "config/tools/0: type must be one of end_call",
    '[{"type": "<script>alert(1)</script>"}]': "config/tools/0: type must be one of",
    '[{"type": "function", "name": "f", "url": "https://example.com",'
    ' "parameters": {"type": "object", "properties": {"id": {"type": 12}}}}]': (
        "config/tools/0/parameters: is not a valid JSON Schema at properties/id/type"
    ),
    '[{"type": "send_dtmf", "name": "keys"}, {"type": "end_call", "name": "keys"}]': (
        "config/tools: tool names must be unique: keys appears twice"
    ),
    '[{"type": "function", "url": "ftp://example.com"}]': "config/tools/0/url: must be an http",
}


async def test_the_tool_editor_shows_errors_by_path_keeps_the_text_and_commits_nothing(
    editor: tuple[Any, str],
) -> None:
    browser, agent_id = editor
    before = await _history(browser, agent_id)
    assert "(1 commit)" in before
    page = await browser.get(f"/dashboard/agents/{agent_id}")
    for tools, error in BAD_TOOLS.items():
        refused = await browser.post(
            f"/dashboard/agents/{agent_id}/commit", data=_form(page, tools, "Broken")
        )
        assert refused.status_code == 422, tools
        text = html.unescape(refused.text)
        assert error in text, (tools, text[text.find('role="alert"') :][:600])
        assert f">{tools}</textarea>" in text  # the person's text is kept as typed
        assert "<script>alert" not in refused.text  # and escaped
        # The live check says the same, committing nothing either.
        checked = await browser.post(
            f"/dashboard/agents/{agent_id}/check",
            data=_form(page, tools),
            headers={"HX-Request": "true"},
        )
        assert checked.status_code == 200 and error in html.unescape(checked.text)
    after = await _history(browser, agent_id)
    assert "(1 commit)" in after and "Broken" not in after


async def test_a_valid_tool_change_commits_and_its_diff_is_in_the_history(
    editor: tuple[Any, str],
) -> None:
    browser, agent_id = editor
    page = await browser.get(f"/dashboard/agents/{agent_id}")
    changed = [
        {**LOOKUP, "timeout_seconds": 5},
        {"type": "transfer_call", "destinations": [{"name": "sales", "number": "+14155550100"}]},
    ]
    tools = orjson.dumps(changed).decode()
    checked = await browser.post(f"/dashboard/agents/{agent_id}/check", data=_form(page, tools))
    assert checked.status_code == 200 and "The config is valid." in checked.text
    committed = await browser.post(
        f"/dashboard/agents/{agent_id}/commit", data=_form(page, tools, "Sales transfers")
    )
    assert committed.status_code == 303, committed.text[:500]
    history = await _history(browser, agent_id)
    assert "(2 commits)" in history and "Sales transfers" in history
    assert "/tools/lookup_order/timeout_seconds" in history
    assert "/tools/transfer_call" in history
    assert '"number": "+14155550100"' in history
    # The editor now shows the committed tools as forms, named.
    assert 'name="tool.1.name" value="transfer_call"' in history
    assert 'name="tool.1.destinations.0.number" value="+14155550100"' in history


async def test_another_organization_s_agent_is_not_checked(
    app: Any, editor: tuple[Any, str]
) -> None:
    browser, agent_id = editor
    other = await make_org(app, "Other")
    stranger = await make_person(app, other)
    async with browser_client(app, "127.0.0.2") as theirs:
        assert (await sign_in(theirs, stranger.email, stranger.password)).status_code == 303
        own = await theirs.get("/dashboard/agents")
        checked = await theirs.post(f"/dashboard/agents/{agent_id}/check", data=_form(own, "[]"))
        committed = await theirs.post(
            f"/dashboard/agents/{agent_id}/commit", data=_form(own, "[]", "Hijack")
        )
        edited = [
            await theirs.post(
                f"/dashboard/agents/{agent_id}/tools",
                data={**_form(own, "[]"), "tools_action": "forms"},
                headers=headers,
            )
            for headers in ({}, {"HX-Request": "true"})
        ]
    assert checked.status_code == 404 and committed.status_code == 404
    assert [e.status_code for e in edited] == [404, 404]
    assert "Hijack" not in await _history(browser, agent_id)
