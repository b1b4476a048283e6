"""The dashboard's Tests tab over HTTP: add a case, run it on the branch shown (the workers do),
see the results with the failing expectations highlighted and the transcripts, and the merge
button's gate; another organization's agent is 404."""

from __future__ import annotations

import asyncio
import html
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.agent_tests_support import CONFIG
from tests.agents_support import create_agent
from tests.conftest import client_for
from tests.dashboard_support import browser_client, csrf_of, make_person, sign_in
from tests.factories import make_org
from tests.llm_stub import StubLLM


@pytest.fixture
def llm() -> Iterator[StubLLM]:
    with StubLLM(replies=["Monday at nine works."]) as stub:
        yield stub


@pytest.fixture
async def app(make_app: Any, llm: StubLLM) -> Any:
    return await make_app(llm_base_url=llm.base_url, worker="embedded", worker_poll_seconds=0.05)


async def test_the_tests_tab_runs_cases_and_shows_what_failed(app):
    org = await make_org(app)
    async with client_for(app) as api:
        agent = await create_agent(api, org, CONFIG)
        await api.post(
            f"/v1/agents/{agent['id']}/branches", headers=org.headers, json={"name": "kinder"}
        )
        await api.patch(
            f"/v1/agents/{agent['id']}",
            headers=org.headers,
            json={"merge_requires_passing_tests": True},
        )
    person = await make_person(app, org)
    base = f"/dashboard/agents/{agent['id']}"
    async with browser_client(app) as c:
        assert (await sign_in(c, person.email, person.password)).status_code == 303
        page = await c.get(f"{base}/tests?branch=kinder")
        assert page.status_code == 200 and "No tests yet." in page.text
        good = {"name": "monday", "turns": [{"user": "Monday?"}], "expect": {"said": "Monday"}}
        bad = {"name": "tuesday", "turns": [{"user": "Tuesday?"}], "expect": {"said": "Tuesday"}}
        for test in (good, bad):
            added = await c.post(
                f"{base}/tests",
                data={"csrf_token": csrf_of(page), "branch": "kinder", "test": json.dumps(test)},
            )
            assert added.status_code == 303, added.text[:500]
        refused = await c.post(
            f"{base}/tests",
            data={
                "csrf_token": csrf_of(page),
                "branch": "kinder",
                "test": json.dumps({**good, "name": "x", "expect": {"said": "(("}}),
            },
        )
        assert refused.status_code == 422 and "expect.said.0" in html.unescape(refused.text)

        agent_page = await c.get(f"{base}?branch=kinder")
        assert "Needs passing tests on kinder" in agent_page.text
        assert "missing: monday" in agent_page.text and "missing: tuesday" in agent_page.text

        page = await c.get(f"{base}/tests?branch=kinder")
        ran = await c.post(
            f"{base}/tests/run", data={"csrf_token": csrf_of(page), "branch": "kinder"}
        )
        assert ran.status_code == 303
        deadline = time.monotonic() + 60
        while True:
            page = await c.get(f"{base}/tests?branch=kinder")
            if "badge running" not in page.text:
                break
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        text = html.unescape(page.text)
        assert '<span class="badge failed">failed</span> kinder' in text
        assert "<mark>expect.said.0: /Tuesday/: expected the agent to say it" in text
        assert "<strong>Caller:</strong> Tuesday?" in text
        assert "<strong>Agent:</strong> Monday at nine works." in text
        assert "failing: tuesday" in text and "missing" not in text.split("Test cases")[0]

        deleted = await c.post(
            f"{base}/tests/delete",
            data={"csrf_token": csrf_of(page), "branch": "kinder", "name": "tuesday"},
        )
        assert deleted.status_code == 303
        agent_page = await c.get(f"{base}?branch=kinder")
        assert "every test passed" in agent_page.text

    other = await make_org(app, "Other")
    stranger = await make_person(app, other)
    async with browser_client(app) as c:
        await sign_in(c, stranger.email, stranger.password)
        assert (await c.get(f"{base}/tests")).status_code == 404
