"""Every dashboard page over HTTP, on the demo data: what the API stored is what the pages show,
forms apply the API's rules, and another organization's resources are 404 pages."""

from __future__ import annotations

import html
import re

import pytest

from callplane.demo import demo_document
from tests.dashboard_support import browser_client, csrf_of, make_person, sign_in
from tests.factories import load, make_org

CALL = "5c0f1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e01"
ENQUEUED = "5c0f1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e03"
NUMBER = "3c2b1a09-8f7e-4d6c-b5a4-938271605f01"


@pytest.fixture
async def demo(app):
    org = await make_org(app)
    created = await load(app, org, demo_document())
    person = await make_person(app, org)
    async with browser_client(app) as client:
        assert (await sign_in(client, person.email, person.password)).status_code == 303
        yield org, created, client


async def test_every_list_and_detail_page_renders(demo):
    org, created, c = demo
    pages = {
        "/dashboard/calls": ["4 calls", "+1"],
        "/dashboard/calls?status=enqueued": ["2 calls with status enqueued"],
        f"/dashboard/calls/{CALL}": ["Transcript", "Analysis results"],
        "/dashboard/calls/new": ["Place a call"],
        "/dashboard/contacts": ["4 contacts with data"],
        "/dashboard/data": ["customers", "appointments"],
        "/dashboard/data/customers": ["5 records", "Ada Lovelace"],
        "/dashboard/data/customers?tier=gold&sort_by=score&sort_direction=asc": ["2 records"],
        "/dashboard/data/customers/1": ["Ada Lovelace", "callbacks"],
        "/dashboard/external-calls": ["2 imported calls"],
        "/dashboard/numbers": ["+14155550123", "Main line"],
        "/dashboard/keys": ["active"],
        "/dashboard/account": ["Change password"],
    }
    for external in created["external_calls"]:
        pages[f"/dashboard/external-calls/{external}"] = ["Legs"]
    for path, texts in pages.items():
        r = await c.get(path)
        assert r.status_code == 200, (path, r.text[:300])
        for text in texts:
            assert text in r.text, (path, text)
    # The players' signed URLs serve the audio.
    page = await c.get(f"/dashboard/external-calls/{created['external_calls'][0]}")
    sources = re.findall(r'<audio controls preload="none" src="([^"]+)"', page.text)
    assert sources
    audio = await c.get(html.unescape(sources[0]).split("127.0.0.1:8000", 1)[1])
    assert audio.status_code == 200 and audio.headers["content-type"].startswith("audio/")
    gold = await c.get("/dashboard/data/customers?tier=gold&sort_by=score&sort_direction=asc")
    assert gold.text.index("Grace Hopper") < gold.text.index("Ada Lovelace")


async def test_contact_search_uses_the_apis_identifier_rules(demo):
    org, _, c = demo
    r = await c.put(
        "/v1/contacts/(415)%20555-0142/data",
        json={"data": {"plan": "pro", "n": 1}},
        headers=org.headers,
    )
    assert r.status_code == 200
    r = await c.get("/dashboard/contacts", params={"q": "+1 415 555 0142"})
    assert "Found" in r.text and "+14155550142" in r.text
    r = await c.get("/dashboard/contacts/%2B14155550142")
    assert (
        r.status_code == 200 and "&#34;plan&#34;: &#34;pro&#34;" in r.text and "Revision" in r.text
    )
    r = await c.get("/dashboard/contacts", params={"q": "nobody-here"})
    assert "No contact data stored" in r.text


async def test_bad_table_filters_and_edits_get_the_apis_messages(demo):
    _, _, c = demo
    r = await c.get("/dashboard/data/customers?score=lots")
    assert r.status_code == 422 and "score: must be an integer" in r.text
    page = await c.get("/dashboard/data/customers/2")
    form = {"csrf_token": csrf_of(page), "name": "Alan Turing", "score": "many", "active": "true"}
    r = await c.post("/dashboard/data/customers/2", data=form)
    assert r.status_code == 422 and "score: must be an integer" in r.text
    r = await c.post("/dashboard/data/customers/2", data={**form, "name": "", "score": "1"})
    assert r.status_code == 422 and "name: is required" in r.text
    r = await c.post("/dashboard/data/customers/2", data={**form, "profile": "{nope"})
    assert r.status_code == 422 and "profile: is not valid JSON" in r.text
    page = await c.get("/dashboard/data/appointments/1")
    r = await c.post(
        "/dashboard/data/appointments/1",
        data={
            "csrf_token": csrf_of(page),
            "customer_id": "999",
            "starts_at": "2026-02-01T10:00:00Z",
        },
    )
    assert r.status_code == 422 and "customer_id" in r.text


async def test_placing_a_call_goes_through_the_apis_rules(demo):
    org, _, c = demo
    page = await c.get("/dashboard/calls/new")
    r = await c.post(
        "/dashboard/calls", data={"csrf_token": csrf_of(page), "to_number": "not a number"}
    )
    assert r.status_code == 422 and "to_number" in r.text
    r = await c.post(
        "/dashboard/calls",
        data={"csrf_token": csrf_of(page), "to_number": "(415) 555-0177", "language": "en-US"},
    )
    assert r.status_code == 303
    call_id = r.headers["location"].rsplit("/", 1)[1]
    api = await c.get(f"/v1/calls/{call_id}", headers=org.headers)
    assert api.json()["call"]["to_number"] == "+14155550177"
    assert api.json()["call"]["status"] == "enqueued"


async def test_renaming_a_number(demo):
    org, _, c = demo
    page = await c.get("/dashboard/numbers")
    r = await c.post(
        f"/dashboard/numbers/{NUMBER}", data={"csrf_token": csrf_of(page), "friendly_name": "  "}
    )
    assert r.status_code == 422 and "friendly_name" in r.text
    r = await c.post(
        f"/dashboard/numbers/{NUMBER}",
        data={"csrf_token": csrf_of(page), "friendly_name": " Front desk "},
    )
    assert r.status_code == 303
    assert "Front desk" in (await c.get("/dashboard/numbers")).text


async def test_another_organizations_resources_are_404_pages(demo, app):
    _, created, c = demo
    other = await make_org(app, "Other")
    theirs = await load(app, other, {"calls": [{"to_number": "+14155550100"}], "tables": []})
    their_call = theirs["calls"][0]
    for path in (
        f"/dashboard/calls/{their_call}",
        "/dashboard/calls/not-a-uuid",
        "/dashboard/data/nope",
        "/dashboard/data/customers/999",
        "/dashboard/external-calls/00000000-0000-0000-0000-000000000000",
        "/dashboard/contacts/%2B19999999999",
        "/dashboard/no-such-page",
    ):
        r = await c.get(path)
        assert r.status_code == 404, path
        assert "<h1>Not found</h1>" in r.text, path
    page = await c.get(f"/dashboard/calls/{CALL}")
    r = await c.post(f"/dashboard/calls/{their_call}/cancel", data={"csrf_token": csrf_of(page)})
    assert r.status_code == 404
    r = await c.post("/dashboard/keys/999999/revoke", data={"csrf_token": csrf_of(page)})
    assert r.status_code == 404


async def test_cancelling_a_finished_call_is_a_conflict_page(demo):
    _, _, c = demo
    page = await c.get(f"/dashboard/calls/{CALL}")
    assert "Cancel call" not in page.text
    r = await c.post(f"/dashboard/calls/{CALL}/cancel", data={"csrf_token": csrf_of(page)})
    assert r.status_code == 409 and "its status is completed" in r.text
    page = await c.get(f"/dashboard/calls/{ENQUEUED}")
    assert "Cancel call" in page.text


HOSTILE = [
    "/dashboard/calls?page=0",
    "/dashboard/calls?page=abc",
    "/dashboard/calls?status=%00",
    "/dashboard/contacts?q=%00",
    "/dashboard/contacts?q=" + "9" * 300,
    "/dashboard/contacts/%00",
    "/dashboard/data/customers?sort_by=nope",
    "/dashboard/data/customers?score=1e400",
    "/dashboard/data/customers?name=%00",
    "/dashboard/data/customers/99999999999999999999999",
    "/dashboard/data/%00",
    "/dashboard/external-calls?page=-1",
    "/dashboard/webhooks/not-a-uuid",
]


async def test_hostile_addresses_get_an_error_page_never_a_500(demo):
    _, _, c = demo
    for path in HOSTILE:
        r = await c.get(path)
        assert r.status_code in (200, 404, 422), (path, r.status_code)
        assert r.headers["content-type"].startswith("text/html"), path


async def test_hostile_sign_in_fields_are_just_wrong(app):
    async with browser_client(app) as c:
        for email, password in (
            ("a\x00@example.com", "x"),
            ("x" * 5000, "y"),
            ("a@b.c", "p" * 5000),
        ):
            r = await sign_in(c, email, password)
            assert r.status_code == 401, email[:20]
