"""The agent studio over HTTP (issue 40): existing tools edited with their kinds' forms, the JSON
one click away and back, both checked by the API's own rules; the Voices page; a viewer shown no
form that writes."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest

from tests.agents_support import create_agent
from tests.conftest import client_for
from tests.dashboard_support import browser_client, make_person, sign_in
from tests.factories import make_org

LOOKUP = {
    "type": "function",
    "name": "lookup_order",
    "url": "https://shop.example.com/orders",
    "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
    "timeout_seconds": 5,
}
TRANSFER = {
    "type": "transfer_call",
    "name": "front_desk",
    "destinations": [{"name": "desk", "number": "+14155550199", "mode": "warm"}],
}
_FIELD = re.compile(r'name="(tool\.[^"]+)"(?: value="([^"]*)")?')
_TEXTAREA = re.compile(r'name="(tool\.[^"]+)"[^>]*>([^<]*)</textarea>')
_SELECTED = re.compile(r'<select[^>]*name="(tool\.[^"]+)"[^>]*>(.*?)</select>', re.S)


def _editor_fields(page: str) -> dict[str, str]:
    """The tools' fields as a browser would send them (inputs, text boxes, chosen options)."""
    found: dict[str, str] = {}
    for name, value in _FIELD.findall(page):
        found.setdefault(name, html.unescape(value))
    for name, text in _TEXTAREA.findall(page):
        found[name] = html.unescape(text)
    for name, options in _SELECTED.findall(page):
        chosen = re.search(r'<option value="([^"]*)" selected', options)
        found[name] = html.unescape(chosen.group(1)) if chosen else ""
    for name in [n for n in found if re.search(r'type="checkbox"[^>]*name="' + re.escape(n), page)]:
        checked = re.search(r'name="' + re.escape(name) + r'" value="1"[^>]*checked', page)
        if not checked:
            del found[name]
    return found


@pytest.fixture
async def studio(make_app: Any) -> Any:
    app = await make_app(worker="off")
    org = await make_org(app)
    async with client_for(app) as api:
        agent = await create_agent(api, org, {"prompt": "Be kind.", "tools": [LOOKUP, TRANSFER]})
    person = await make_person(app, org)
    async with browser_client(app) as browser:
        assert (await sign_in(browser, person.email, person.password)).status_code == 303
        yield app, org, browser, agent["id"]


def _base(page: str) -> dict[str, str]:
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token is not None
    return {
        "csrf_token": token.group(1),
        "branch": "main",
        "prompt": "Be kind.",
        "settings": "{}",
        "tools_mode": "form",
    }


async def test_existing_tools_are_edited_with_forms_and_as_json(studio: Any) -> None:
    app, org, browser, agent_id = studio
    url = f"/dashboard/agents/{agent_id}"
    page = (await browser.get(url)).text
    fields = _editor_fields(page)
    # Each existing tool is its kind's form, filled in; a transfer's destinations are rows.
    assert fields["tool.0.type"] == "function" and fields["tool.0.url"] == LOOKUP["url"]
    assert fields["tool.0.timeout_seconds"] == "5"
    assert '"id"' in fields["tool.0.parameters"]
    assert fields["tool.1.destinations.0.number"] == "+14155550199"
    assert fields["tool.1.destinations.0.mode"] == "warm"
    assert fields["tool.1.destinations.1.name"] == ""  # a blank row, to add one

    # Edit the existing tools in their forms: a new timeout, a second destination.
    form = {**_base(page), **fields}
    form["tool.0.timeout_seconds"] = "8"
    form["tool.1.destinations.1.name"] = "sales"
    form["tool.1.destinations.1.number"] = "+14155550100"
    checked = await browser.post(f"{url}/check", data=form, headers={"HX-Request": "true"})
    assert "The config is valid." in checked.text
    # Each field's slot is emptied in place, as it is filled when the check finds a problem.
    assert '<p class="field-error" id="tool-0-url-error" hx-swap-oob="true"></p>' in checked.text
    no_url = await browser.post(
        f"{url}/check",
        data={**form, "tool.0.url": "", "tool.1.destinations.2.name": "nobody"},
        headers={"HX-Request": "true"},
    )
    beside = html.unescape(no_url.text)
    assert "config/tools/0/url: is required" in beside  # listed by path, and beside its field:
    assert 'id="tool-0-url-error" hx-swap-oob="true">is required</p>' in beside
    assert 'id="tool-1-destinations-error" hx-swap-oob="true">row 3: needs exactly one' in beside
    assert 'id="tool-0-timeout_seconds-error" hx-swap-oob="true"></p>' in beside
    # One click to the JSON (htmx swaps only the tools' part), the edits carried over.
    as_json = await browser.post(
        f"{url}/tools", data={**form, "tools_action": "json"}, headers={"HX-Request": "true"}
    )
    assert as_json.status_code == 200
    assert 'id="tools-editor"' in as_json.text and "<html" not in as_json.text
    text = html.unescape(as_json.text)
    assert '"timeout_seconds": 8' in text and '"number": "+14155550100"' in text
    # A key the kind does not know cannot be shown as a form: it stays JSON, the key named.
    tools_json = re.search(r'name="tools"[^>]*>([^<]*)</textarea>', as_json.text)
    assert tools_json is not None
    typed = html.unescape(tools_json.group(1)).replace('"timeout_seconds": 8', '"timeout": 8')
    back = await browser.post(
        f"{url}/tools",
        data={**_base(page), "tools_mode": "json", "tools": typed, "tools_action": "forms"},
        headers={"HX-Request": "true"},
    )
    assert "tools/0: unknown key timeout" in html.unescape(back.text)
    assert 'name="tools_mode" value="json"' in back.text
    # The same key refused by the API's model on commit, naming the path.
    refused = await browser.post(
        f"{url}/commit", data={**_base(page), "tools_mode": "json", "tools": typed}
    )
    assert refused.status_code == 422
    assert "config/tools/0/timeout: unknown key" in html.unescape(refused.text)

    # A bad number in a form: named by its path, nothing committed.
    bad = await browser.post(
        f"{url}/commit", data={**form, "tool.0.timeout_seconds": "soon", "message": "x"}
    )
    assert bad.status_code == 422
    assert "Tools: tools/0/timeout_seconds: must be a number" in html.unescape(bad.text)
    assert '<p class="field-error" id="tool-0-timeout_seconds-error">must be a number</p>' in (
        bad.text
    )
    assert re.search(
        r'name="tool\.0\.timeout_seconds" value="soon"[^>]*aria-invalid="true"', bad.text
    )
    assert 'value="soon"' in bad.text  # the typing is kept

    committed = await browser.post(f"{url}/commit", data={**form, "message": "Sales too"})
    assert committed.status_code == 303, committed.text[:500]
    async with client_for(app) as api:
        head = (await api.get(f"/v1/agents/{agent_id}", headers=org.headers)).json()["agent"]
    function, transfer = head["config"]["tools"]
    assert function == {**LOOKUP, "timeout_seconds": 8}
    # The untouched first row keeps its mode; the new row leaves it to the default.
    assert transfer["destinations"] == [
        TRANSFER["destinations"][0],
        {"name": "sales", "number": "+14155550100"},
    ]


async def test_tools_are_added_and_removed_as_a_draft(studio: Any) -> None:
    app, org, browser, agent_id = studio
    url = f"/dashboard/agents/{agent_id}"
    page = (await browser.get(url)).text
    form = {**_base(page), **_editor_fields(page)}
    added = await browser.post(
        f"{url}/tools", data={**form, "tools_action": "add", "new_tool": "contact_data"}
    )
    assert added.status_code == 200 and "<html" in added.text  # without htmx, the whole page
    assert 'name="tool.2.type" value="contact_data"' in added.text
    assert 'name="tool.2.writable"' in added.text
    form = {**_base(page), **_editor_fields(added.text), "tool.2.writable": "1"}
    removed = await browser.post(
        f"{url}/tools", data={**form, "tools_action": "remove:0"}, headers={"HX-Request": "true"}
    )
    fields = _editor_fields(removed.text)
    assert fields["tool.0.type"] == "transfer_call" and fields["tool.1.type"] == "contact_data"
    assert fields["tool.1.writable"] == "1"
    unknown = await browser.post(
        f"{url}/tools", data={**form, "tools_action": "add", "new_tool": "teleport"}
    )
    assert unknown.status_code == 422 and "choose the kind of tool" in unknown.text
    # Nothing was committed by any of it.
    async with client_for(app) as api:
        commits = (await api.get(f"/v1/agents/{agent_id}/commits", headers=org.headers)).json()
    assert commits["total_count"] == 1
    committed = await browser.post(
        f"{url}/commit", data={**_base(page), **fields, "message": "No lookup"}
    )
    assert committed.status_code == 303
    async with client_for(app) as api:
        head = (await api.get(f"/v1/agents/{agent_id}", headers=org.headers)).json()["agent"]
    assert [t["type"] for t in head["config"]["tools"]] == ["transfer_call", "contact_data"]
    assert head["config"]["tools"][1] == {
        "type": "contact_data",
        "name": "contact_data",
        "writable": True,
    }


async def test_the_voices_page_and_a_viewer_s_read_only_studio(studio: Any) -> None:
    app, org, browser, agent_id = studio
    async with client_for(app) as api:
        voice = await api.post(
            "/v1/voices",
            headers=org.headers,
            json={"name": "Aria", "languages": ["en"], "engine": "espeak-ng:en-us"},
        )
        assert voice.status_code == 201, voice.text
        voice_id = voice.json()["id"]
        used = await api.post(
            f"/v1/agents/{agent_id}/commits",
            headers=org.headers,
            json={"branch": "main", "config": {"voice_id": voice_id}, "message": "Aria"},
        )
        assert used.status_code == 201, used.text
    page = await browser.get("/dashboard/voices?say=Good+morning")
    assert page.status_code == 200
    assert 'href="/dashboard/voices" aria-current="page"' in page.text  # in the navigation
    assert f'src="/dashboard/voices/{voice_id}/preview?text=Good+morning"' in page.text
    assert f'<a href="/dashboard/agents/{agent_id}">Riley</a>' in page.text
    spoken = await browser.get(f"/dashboard/voices/{voice_id}/preview?text=Good+morning")
    assert spoken.status_code == 200 and spoken.content[:4] == b"RIFF"
    # Added and deleted through the API's model and service; a voice in use is not deleted.
    form = {"csrf_token": _base(page.text)["csrf_token"], "name": "Bo", "languages": "en-GB, fr"}
    unknown = await browser.post("/dashboard/voices", data={**form, "engine": "espeak-ng:xx-nope"})
    assert unknown.status_code == 422 and "engine: " in html.unescape(unknown.text)
    assert 'value="Bo"' in unknown.text  # the form keeps what was typed
    added = await browser.post("/dashboard/voices", data={**form, "engine": "espeak-ng:en-gb"})
    assert added.status_code == 303
    async with client_for(app) as api:
        listed = (await api.get("/v1/voices", headers=org.headers)).json()
    bo = next(v for v in listed if v["name"] == "Bo")
    assert bo["languages"] == ["en-GB", "fr"] and bo["engine"] == "espeak-ng:en-gb"
    held = await browser.post(f"/dashboard/voices/{voice_id}/delete", data=form)
    assert held.status_code == 409 and "Aria: Voice is used by" in html.unescape(held.text)
    gone = await browser.post(f"/dashboard/voices/{bo['id']}/delete", data=form)
    assert gone.status_code == 303
    assert "<strong>Bo</strong>" not in (await browser.get("/dashboard/voices")).text

    viewer = await make_person(app, org, role="viewer")
    async with browser_client(app, "127.0.0.3") as theirs:
        assert (await sign_in(theirs, viewer.email, viewer.password)).status_code == 303
        seen = await theirs.get(f"/dashboard/agents/{agent_id}")
        voices = await theirs.get("/dashboard/voices")
        may_not = await theirs.post(
            "/dashboard/voices", data={**_base(voices.text), "name": "X", "engine": "espeak-ng:en"}
        )
        others = [
            (await theirs.get(path)).text
            for path in (
                "/dashboard/agents",
                "/dashboard/calls",
                f"/dashboard/agents/{agent_id}/tests",
                "/dashboard/campaigns",
                "/dashboard/webhooks",
            )
        ]
        refused = await theirs.post(
            f"/dashboard/agents/{agent_id}/commit", data={**_base(seen.text), "message": "x"}
        )
    assert seen.status_code == 200 and voices.status_code == 200 and may_not.status_code == 403
    assert "Add a voice" not in voices.text and "/delete" not in voices.text
    assert "Read only: your role (viewer)" in seen.text
    assert '<fieldset class="plain" disabled>' in seen.text
    for write in ('/commit"', '/merge"', '/branches"', '/test-call"', '/rollback"', '/chat"'):
        assert f'action="/dashboard/agents/{agent_id}{write}' not in seen.text, write
    assert "Commit to main" not in seen.text and 'name="tools_action"' not in seen.text
    assert refused.status_code == 403
    for other in others:  # nor on the other pages
        assert (
            'method="post"'
            not in other.replace('action="/dashboard/sign-out"', "").split("</header>")[1]
        )
    assert "Place a call" not in others[1]


async def test_the_voices_page_names_the_default_calls_really_speak_with(make_app: Any) -> None:
    # Configured for a Piper voice this machine does not have: calls speak espeak-ng instead.
    app = await make_app(worker="off", voice_engine="piper:en_US-nobody-high")
    person = await make_person(app, await make_org(app))
    async with browser_client(app) as browser:
        assert (await sign_in(browser, person.email, person.password)).status_code == 303
        page = await browser.get("/dashboard/voices")
    assert page.status_code == 200
    assert "this server's default (<code>espeak-ng:en-us</code>)" in page.text
    assert "en_US-nobody-high" not in page.text


async def test_stored_tools_round_trip_through_the_forms_unchanged(studio: Any) -> None:
    """Explicit defaults (a ``false``, a default choice, a default number) stay as stored when
    the forms are saved untouched: nothing to commit, not a diff removing them."""
    app, org, browser, agent_id = studio
    explicit = [
        {"type": "contact_data", "name": "contact_data", "writable": False},
        {**LOOKUP, "timeout_seconds": 10, "parameters": {"type": "object"}},
        {**TRANSFER, "destinations": [{"name": "desk", "number": "+14155550199", "mode": "cold"}]},
    ]
    async with client_for(app) as api:
        made = await api.post(
            f"/v1/agents/{agent_id}/commits",
            headers=org.headers,
            json={"config": {"prompt": "Be kind.", "tools": explicit}, "message": "Explicit"},
        )
        assert made.status_code == 201, made.text
    url = f"/dashboard/agents/{agent_id}"
    page = (await browser.get(url)).text
    form = {**_base(page), **_editor_fields(page)}
    as_json = await browser.post(
        f"{url}/tools", data={**form, "tools_action": "json"}, headers={"HX-Request": "true"}
    )
    tools_json = re.search(r'name="tools"[^>]*>([^<]*)</textarea>', as_json.text)
    assert tools_json is not None and json.loads(html.unescape(tools_json.group(1))) == explicit
    saved = await browser.post(f"{url}/commit", data={**form, "message": "Untouched"})
    assert saved.status_code == 303, saved.text[:500]
    assert "Nothing%20changed" in saved.headers["location"]
    async with client_for(app) as api:
        commits = (await api.get(f"/v1/agents/{agent_id}/commits", headers=org.headers)).json()
        head = (await api.get(f"/v1/agents/{agent_id}", headers=org.headers)).json()["agent"]
    assert commits["total_count"] == 2 and head["config"]["tools"] == explicit
    # An explicit empty list of tools is kept as well.
    async with client_for(app) as api:
        none = await api.post(
            f"/v1/agents/{agent_id}/commits",
            headers=org.headers,
            json={"config": {"prompt": "Be kind.", "tools": []}, "message": "No tools"},
        )
        assert none.status_code == 201, none.text
    page = (await browser.get(url)).text
    form = {**_base(page), **_editor_fields(page)}
    form.update(re.findall(r'name="(tools_listed)" value="([^"]*)"', page))
    saved = await browser.post(f"{url}/commit", data={**form, "message": "Untouched"})
    assert "Nothing%20changed" in saved.headers["location"]
