"""The dashboard's view of tools: a call's tool uses and transfer inline in its transcript (a real
call on the simulated network, the stub brain asking for the tools, a real local receiver
answering the function tool with hostile markup), and the agent editor's tools validated by
the API's own rules before anything is committed."""

from __future__ import annotations

import html
from typing import Any

from tests.conftest import client_for
from tests.dashboard_support import browser_client, make_person, sign_in
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
    assert '"order_id": "<b>42</b>"' in text  # the arguments, indented JSON
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
