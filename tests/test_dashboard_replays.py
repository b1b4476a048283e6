"""The dashboard's "Replay last N calls" view over HTTP: the form on the Tests tab starts a
replay (the workers do it) and redirects to its page, which shows each call before and after
side by side and marks what changed; a bad N is refused; another organization's replay is 404."""

from __future__ import annotations

import asyncio
import html
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.agent_tests_support import CONFIG
from tests.agents_support import commit, create_agent, head
from tests.conftest import client_for
from tests.dashboard_support import browser_client, csrf_of, make_person, sign_in
from tests.factories import load, make_org
from tests.llm_stub import Reply, StubLLM


@pytest.fixture
def llm() -> Iterator[StubLLM]:
    with StubLLM(
        replies=[
            Reply("Let me book that.", tool="book", arguments={"day": "Monday"}),
            Reply("Bye!", tool="end_call", arguments={}),
        ],
        after_tool=["Booked."],
        summary="The caller booked Monday.",
    ) as stub:
        yield stub


@pytest.fixture
async def app(make_app: Any, llm: StubLLM) -> Any:
    return await make_app(llm_base_url=llm.base_url, worker="embedded", worker_poll_seconds=0.05)


def _call(agent: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "status": "completed",
        "agent_id": agent["id"],
        "agent_commit_id": head(agent),
        "created_at": "2026-11-20T10:01:00Z",
        "transcripts": [
            {"role": "assistant", "text": "Hi, this is Bright Smiles."},
            {"role": "user", "text": "Can I come on Monday?"},
            {"role": "assistant", "function_name": "book", "arguments": {"day": "Monday"}},
            {"role": "tool", "function_name": "book", "text": '{"slot": "10:30"}'},
            {"role": "assistant", "text": "You are booked at 10:30."},
            {"role": "user", "text": "Thanks, bye."},
        ],
    }


async def test_replaying_the_last_calls_shows_them_side_by_side(app):
    org = await make_org(app)
    async with client_for(app) as api:
        agent = await create_agent(api, org, CONFIG)
        call = _call(agent)
        await load(app, org, {"calls": [call]})
        await api.post(
            f"/v1/agents/{agent['id']}/branches", headers=org.headers, json={"name": "next"}
        )
        await commit(api, org, agent["id"], branch="next", changes={"prompt": "Be quick."})
    person = await make_person(app, org)
    base = f"/dashboard/agents/{agent['id']}"
    async with browser_client(app) as c:
        assert (await sign_in(c, person.email, person.password)).status_code == 303
        page = await c.get(f"{base}/tests?branch=next")
        assert "Replay last N calls against next" in page.text
        for bad, why in (
            ("0", "must be at least 1"),
            ("101", "must be at most 100"),
            ("many", "must be an integer"),
        ):
            refused = await c.post(
                f"{base}/replays",
                data={"csrf_token": csrf_of(page), "branch": "next", "last": bad},
            )
            assert refused.status_code == 422 and f"<li>last: {why}</li>" in refused.text
        refused = await c.post(
            f"{base}/replays", data={"csrf_token": csrf_of(page), "branch": "nope", "last": "5"}
        )
        assert refused.status_code == 422 and "no such branch" in refused.text

        started = await c.post(
            f"{base}/replays", data={"csrf_token": csrf_of(page), "branch": "next", "last": "5"}
        )
        assert started.status_code == 303, started.text[:500]
        where = started.headers["location"]
        assert f"{base}/replays/" in where
        deadline = time.monotonic() + 60
        while True:
            shown = await c.get(where)
            assert shown.status_code == 200
            if "badge running" not in shown.text:
                break
            assert 'hx-trigger="every 2s"' in shown.text
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        text = html.unescape(shown.text)
        assert '<span class="badge done">done</span>' in text and "hx-trigger" not in text
        assert "Replay of 1 call " in text and call["id"] in text
        assert '<span class="badge failed">changed</span>' in text
        # Before and after side by side, readable, the changes marked.
        assert "Tool calls <mark>differ</mark>" in text
        assert "<td><p><code>book(day: Monday)</code></p></td>" in text
        assert "<mark><code>end_call()</code></mark>" in text
        assert "Agent ended the call <mark>differs</mark>" in text
        assert "<td>no</td>" in text and "<mark>yes</mark>" in text
        assert "The caller booked Monday." in text
        assert "<strong>Caller:</strong> Thanks, bye." in text
        assert '<em>book answered</em> <code>{"slot": "10:30"}</code>' in text

        # The Tests tab lists it, to come back to.
        page = await c.get(f"{base}/tests?branch=next")
        assert f'<a href="{where}">1 call against next</a>' in page.text

    other = await make_org(app, "Other")
    stranger = await make_person(app, other)
    async with browser_client(app) as c:
        await sign_in(c, stranger.email, stranger.password)
        assert (await c.get(where)).status_code == 404
        assert (
            await c.get(f"/dashboard/agents/{agent['id']}/replays/{uuid.uuid4()}")
        ).status_code == 404
