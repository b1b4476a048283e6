"""Every successful dashboard form answers 303 to a page (POST-redirect-GET), so refreshing the
page never submits the form again; a secret shown once rides the redirect encrypted, is shown
by the page it leads to, and is gone on refresh. The call page shows the events timeline, and a
call that never connected has no duration ("—")."""

from __future__ import annotations

import re

import pytest

from callplane.dashboard.flash import COOKIE
from callplane.demo import demo_document
from tests.dashboard_support import browser_client, csrf_of, make_person, sign_in
from tests.engine_support import create_call, engine_app, wait_for_call
from tests.factories import load, make_org


@pytest.fixture
async def demo(make_app):
    app = await make_app(webhook_allow_private_networks=True)
    org = await make_org(app)
    await load(app, org, demo_document())
    person = await make_person(app, org)
    async with browser_client(app) as client:
        assert (await sign_in(client, person.email, person.password)).status_code == 303
        yield org, client, person


async def test_a_new_key_is_shown_once_after_a_redirect(demo) -> None:
    org, c, _ = demo
    page = await c.get("/dashboard/keys")
    r = await c.post("/dashboard/keys", data={"csrf_token": csrf_of(page), "name": "CRM"})
    assert r.status_code == 303 and r.headers["location"] == "/dashboard/keys"
    assert "cp_" not in r.headers["location"] and COOKIE in r.cookies
    shown = await c.get("/dashboard/keys")
    [key] = re.findall(r'id="new-key"[^>]*value="(cp_[^"]+)"', shown.text)
    assert (
        await c.get("/v1/voices", headers={"Authorization": f"Bearer {key}"})
    ).status_code == 200
    again = await c.get("/dashboard/keys")  # a refresh: no key, no new key made
    assert key not in again.text and "new-key" not in again.text
    listed = await c.get("/v1/voices", headers=org.headers)
    assert listed.status_code == 200


async def test_a_new_webhook_secret_is_shown_once_after_a_redirect(demo) -> None:
    org, c, _ = demo
    page = await c.get("/dashboard/webhooks")
    r = await c.post(
        "/dashboard/webhooks",
        data={"csrf_token": csrf_of(page), "url": "http://127.0.0.1:9/hook"},
    )
    assert r.status_code == 303 and r.headers["location"] == "/dashboard/webhooks"
    shown = await c.get("/dashboard/webhooks")
    assert re.search(r'id="new-secret"[^>]*value="whsec_', shown.text)
    again = await c.get("/dashboard/webhooks")
    assert "new-secret" not in again.text
    hooks = (await c.get("/v1/webhooks", headers=org.headers)).json()["webhooks"]
    assert len(hooks) == 1  # made once


async def test_a_forged_or_stale_flash_shows_nothing(demo) -> None:
    _, c, _ = demo
    c.cookies.set(COOKIE, "not-a-token", path="/dashboard")
    page = await c.get("/dashboard/keys")
    assert page.status_code == 200 and "new-key" not in page.text


async def test_saving_a_record_and_a_password_redirect(demo) -> None:
    _, c, person = demo
    page = await c.get("/dashboard/data/customers/2")
    form = {"csrf_token": csrf_of(page), "name": "Alan Turing", "score": "7", "active": "true"}
    r = await c.post("/dashboard/data/customers/2", data=form)
    assert r.status_code == 303 and r.headers["location"] == "/dashboard/data/customers/2?saved=1"
    assert "Alan Turing" in (await c.get(r.headers["location"])).text
    page = await c.get("/dashboard/account")
    r = await c.post(
        "/dashboard/account/password",
        data={
            "csrf_token": csrf_of(page),
            "current_password": person.password,
            "new_password": "a much longer new password",
            "confirm_password": "a much longer new password",
        },
    )
    assert r.status_code == 303 and r.headers["location"] == "/dashboard/account?done=1"


async def test_the_call_page_shows_its_timeline_and_no_duration_when_never_connected(
    make_app,
) -> None:
    app = await engine_app(make_app, simulated_call_seconds=0.5)
    org = await make_org(app)
    person = await make_person(app, org)
    async with browser_client(app) as c:
        assert (await sign_in(c, person.email, person.password)).status_code == 303
        answered = await create_call(c, org, "+14155550100")
        busy = await create_call(c, org, "+14155550001")
        await wait_for_call(c, org, answered)
        await wait_for_call(c, org, busy)
        page = (await c.get(f"/dashboard/calls/{answered}")).text
        timeline = page.split("<h2>Events</h2>", 1)[1].split("</ol>", 1)[0]
        assert [t for t in ("call.dialing", "call.in_progress", "call.ended") if t in timeline] == [
            "call.dialing",
            "call.in_progress",
            "call.ended",
        ]
        never = (await c.get(f"/dashboard/calls/{busy}")).text
        assert re.search(r"<dt>Duration</dt><dd>—</dd>", never)
        listing = (await c.get("/dashboard/calls")).text
        assert "—" in listing
