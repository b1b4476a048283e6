"""Every call shows its agent, branch and commit (message and short id), linked; the calls list
has an Agent column and filters by agent, outcome and number (issue 40). The app's own worker is
off: the calls stay enqueued, which is all a list needs."""

from __future__ import annotations

from typing import Any

from tests.agents_support import commit, create_agent
from tests.conftest import client_for
from tests.dashboard_support import browser_client, csrf_of, make_person, sign_in
from tests.factories import load, make_org


async def _call(client: Any, org: Any, to: str, **body: Any) -> str:
    response = await client.post("/v1/calls", headers=org.headers, json={"to_number": to, **body})
    assert response.status_code == 201, response.text
    return str(response.json()["call_id"])


async def test_calls_show_their_agent_branch_and_commit_and_filter_by_them(make_app: Any) -> None:
    app = await make_app(worker="off")
    org, other = await make_org(app, "Ours"), await make_org(app, "Theirs")
    async with client_for(app) as client:
        riley = await create_agent(client, org, {"first_message": "Hi."})
        await client.post(
            f"/v1/agents/{riley['id']}/branches", headers=org.headers, json={"name": "warmer"}
        )
        made = await commit(
            client,
            org,
            riley["id"],
            branch="warmer",
            message="A warmer greeting\n\nLonger reasons.",
            changes={"first_message": "Hello!"},
        )
        sam = await client.post(
            "/v1/agents", headers=org.headers, json={"name": "Sam", "config": {}}
        )
        theirs = await create_agent(client, other, {"first_message": "Hi."})
        with_riley = await _call(
            client, org, "+14155550120", agent_id=riley["id"], agent_branch_name="warmer"
        )
        await _call(client, org, "+14155550121", agent_id=sam.json()["agent"]["id"])
        plain = await _call(client, org, "(415) 555-0122")
        await _call(client, other, "+14155550123", agent_id=theirs["id"])
    person = await make_person(app, org)
    async with browser_client(app) as browser:
        await sign_in(browser, person.email, person.password)
        listed = (await browser.get("/dashboard/calls")).text
        only_riley = (await browser.get(f"/dashboard/calls?agent={riley['id']}")).text
        by_number = (await browser.get("/dashboard/calls?number=%2B1+415-555-0122")).text
        nonsense = await browser.get("/dashboard/calls?agent=nope&number=hello")
        page = (await browser.get(f"/dashboard/calls/{with_riley}")).text
        bare = (await browser.get(f"/dashboard/calls/{plain}")).text
    assert '<th scope="col">Agent</th>' in listed
    assert f'href="/dashboard/agents/{riley["id"]}">Riley</a> <small>warmer</small>' in listed
    assert ">Sam</a>" in listed and "3 calls" in listed
    assert "Theirs" not in listed and theirs["id"] not in listed
    assert "1 call." in only_riley and ">Sam</a>" not in only_riley
    assert "1 call." in by_number and "+14155550122" in by_number
    assert nonsense.status_code == 200 and "3 calls" in nonsense.text
    commit_id = made["commit"]["id"]
    assert f'href="/dashboard/agents/{riley["id"]}">Riley</a>' in page
    assert "on branch" in page and ">warmer</a>" in page
    assert f">{commit_id[:8]}</a> “A warmer greeting”" in page
    assert f"#commit-{commit_id}" in page and "Longer reasons" not in page
    assert "none (the call&#39;s own fields)" in bare or "none (the call's own fields)" in bare


async def test_place_a_call_with_an_agent_and_branch(make_app: Any) -> None:
    app = await make_app(worker="off")
    org = await make_org(app)
    async with client_for(app) as client:
        riley = await create_agent(client, org, {"first_message": "Hi."})
        await client.post(
            f"/v1/agents/{riley['id']}/branches", headers=org.headers, json={"name": "warmer"}
        )
    person = await make_person(app, org)
    async with browser_client(app) as browser:
        await sign_in(browser, person.email, person.password)
        form = await browser.get("/dashboard/calls/new")
        assert f'<option value="{riley["id"]}">Riley</option>' in form.text
        token = csrf_of(form)
        placed = await browser.post(
            "/dashboard/calls",
            data={
                "csrf_token": token,
                "to_number": "+14155550140",
                "agent_id": riley["id"],
                "agent_branch_name": "warmer",
            },
        )
        wrong = await browser.post(
            "/dashboard/calls",
            data={
                "csrf_token": token,
                "to_number": "+14155550141",
                "agent_id": riley["id"],
                "agent_branch_name": "nope",
            },
        )
    assert placed.status_code == 303, placed.text
    call_id = placed.headers["location"].rsplit("/", 1)[-1]
    async with client_for(app) as client:
        call = (await client.get(f"/v1/calls/{call_id}", headers=org.headers)).json()["call"]
    assert call["agent_id"] == riley["id"] and call["agent_branch_name"] == "warmer"
    assert wrong.status_code == 422 and "nope" in wrong.text
    assert f'<option value="{riley["id"]}" selected>Riley</option>' in wrong.text


async def test_analysis_results_read_as_fields(app: Any) -> None:
    org = await make_org(app)
    answered = {
        "to_number": "+14155550150",
        "status": "completed",
        "summary": "The caller booked a cleaning.",
        "analysis_results": [
            {"prompt": "How did it go?", "result": {"sentiment": "positive", "booked": True}},
            {"prompt": "Anything odd?", "result": None, "error": "invalid twice"},
        ],
    }
    [call_id] = (await load(app, org, {"calls": [answered]}))["calls"]
    person = await make_person(app, org)
    async with browser_client(app) as browser:
        await sign_in(browser, person.email, person.password)
        page = (await browser.get(f"/dashboard/calls/{call_id}")).text
    assert "<h3>How did it go?</h3>" in page
    assert "<dt>sentiment</dt><dd>positive</dd>" in page and "<dt>booked</dt><dd>yes</dd>" in page
    assert "No answer: invalid twice." in page
    assert "The caller booked a cleaning." in page and '"sentiment"' not in page
