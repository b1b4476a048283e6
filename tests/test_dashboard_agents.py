"""The dashboard's Agents pages over HTTP, on the demo data: edit → commit → diff → rollback,
branches, merge conflicts shown by path, a test call, and other organizations' agents 404."""

from __future__ import annotations

import html
import re

import pytest

from callplane.demo import demo_document
from tests.dashboard_support import browser_client, csrf_of, make_person, sign_in
from tests.factories import load, make_org

RILEY = "6f1c2a1e-8a43-4c39-9a55-1d2f3e4a5b01"


@pytest.fixture
async def demo(app):
    org = await make_org(app)
    await load(app, org, demo_document())
    person = await make_person(app, org)
    async with browser_client(app) as client:
        assert (await sign_in(client, person.email, person.password)).status_code == 303
        yield org, person, client


def _form(page, **values):
    return {"csrf_token": csrf_of(page), **values}


async def test_edit_commit_diff_and_roll_back(demo):
    _, person, c = demo
    listed = await c.get("/dashboard/agents")
    assert listed.status_code == 200 and "Riley" in listed.text
    page = await c.get(f"/dashboard/agents/{RILEY}")
    assert page.status_code == 200 and "Bright Smiles Dental" in html.unescape(page.text)
    committed = await c.post(
        f"/dashboard/agents/{RILEY}/commit",
        data=_form(
            page,
            branch="main",
            prompt="You are Riley. Be brief.",
            first_message="Hello!",
            voice_id="",
            tools="[]",
            settings='{"language": "en"}',
            message="Shorter prompt",
        ),
    )
    assert committed.status_code == 303, committed.text[:500]
    page = await c.get(committed.headers["location"].removeprefix("http://testserver"))
    text = html.unescape(page.text)
    assert "Shorter prompt" in text and f"user:{person.email}" in text
    assert "/prompt" in text and "You are Riley. Be brief." in text and "/voicemail" in text
    bad = await c.post(
        f"/dashboard/agents/{RILEY}/commit",
        data=_form(page, branch="main", tools='[{"type": "function", "url": "x"}]', settings=""),
    )
    assert bad.status_code == 422 and "config/tools/0/url" in html.unescape(bad.text)
    # Every commit but the head has a "Roll back to this" form naming it.
    oldest = re.findall(r'name="commit" value="([0-9a-f-]{36})"', page.text)[-1]
    rolled = await c.post(
        f"/dashboard/agents/{RILEY}/rollback", data=_form(page, branch="main", commit=oldest)
    )
    assert rolled.status_code == 303
    after = html.unescape((await c.get(f"/dashboard/agents/{RILEY}")).text)
    assert f'Roll back to {oldest[:8]} ("Initial configuration")' in after
    assert "Bright Smiles Dental" in after


async def test_branches_merge_conflicts_and_a_test_call(demo):
    _, _, c = demo
    page = await c.get(f"/dashboard/agents/{RILEY}")
    made = await c.post(
        f"/dashboard/agents/{RILEY}/branches", data=_form(page, name="beta", **{"from": "main"})
    )
    assert made.status_code == 303
    for branch, prompt in (("beta", "from beta"), ("main", "from main")):
        page = await c.get(f"/dashboard/agents/{RILEY}?branch={branch}")
        r = await c.post(
            f"/dashboard/agents/{RILEY}/commit",
            data=_form(page, branch=branch, prompt=prompt, tools="", settings="{}", message=prompt),
        )
        assert r.status_code == 303, r.text[:300]
    conflict = await c.post(
        f"/dashboard/agents/{RILEY}/merge", data=_form(page, branch="beta", into="main")
    )
    assert conflict.status_code == 409
    # The conflict names the setting and shows both sides' values beside the ancestor's.
    region = html.unescape(
        conflict.text.split('aria-label="Merge conflict"')[1].split("</table>")[0]
    )
    assert "<code>/prompt</code>" in region
    assert '"from main"' in region and '"from beta"' in region and "You are Riley" in region
    bad_name = await c.post(f"/dashboard/agents/{RILEY}/branches", data=_form(page, name="a..b"))
    assert bad_name.status_code == 422
    called = await c.post(
        f"/dashboard/agents/{RILEY}/test-call",
        data=_form(page, branch="beta", to_number="+14155550100", params='{"name": "Ada"}'),
    )
    assert called.status_code == 303 and "/calls/" in called.headers["location"]
    call_page = await c.get(called.headers["location"].removeprefix("http://testserver"))
    assert call_page.status_code == 200
    deleted = await c.post(
        f"/dashboard/agents/{RILEY}/branches/delete", data=_form(page, branch="beta")
    )
    assert deleted.status_code == 303
    created = await c.post("/dashboard/agents", data=_form(page, name="Sam"))
    assert created.status_code == 303


async def test_another_organizations_agent_is_a_404_page(demo, app):
    _, _, c = demo
    other = await make_org(app, "Other")
    theirs = "6f1c2a1e-8a43-4c39-9a55-1d2f3e4a5b99"
    await load(app, other, {"agents": [{"uuid": theirs, "name": "Theirs"}]})
    assert (await c.get(f"/dashboard/agents/{theirs}")).status_code == 404
    page = await c.get("/dashboard/agents")
    r = await c.post(f"/dashboard/agents/{theirs}/rollback", data=_form(page, commit=theirs))
    assert r.status_code == 404
    assert "Theirs" not in (await c.get("/dashboard/agents")).text
