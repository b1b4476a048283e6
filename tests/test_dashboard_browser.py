"""The dashboard in a real headless Chromium against a real server (see ``tests/browser.py``).

One browser and one server for the module; every test makes its own organization and person.
Screenshots of every page land in ``build/screenshots/<backend>/`` for people to look at.
"""

from __future__ import annotations

import re
import secrets
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from callplane.demo import demo_document
from callplane.loader import load_document
from callplane.orgs.service import create_organization, issue_key
from callplane.users.service import create_user
from tests.browser import (
    CHROMIUM_ARGS,
    SCREENSHOTS,
    Served,
    chromium_path,
    run_elsewhere,
    served,
)
from tests.conftest import BACKEND, _reset_postgres


@pytest.fixture(scope="module")
def server(database_template: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("browser")
    if BACKEND == "sqlite":
        shutil.copyfile(database_template, root / "dashboard.db")
        url = f"sqlite:///{root / 'dashboard.db'}"
    else:
        run_elsewhere(lambda: _reset_postgres(database_template))
        url = database_template
    with served(url, root / "recordings") as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = chromium_path()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@dataclass
class Tenant:
    org_id: int
    api_key: str
    email: str
    password: str
    api: httpx.Client


@pytest.fixture
def tenant(server: Served) -> Iterator[Tenant]:
    email = f"p-{secrets.token_hex(4)}@example.com"
    password = secrets.token_urlsafe(12)

    async def work(session: Any) -> tuple[int, str]:
        org = await create_organization(session, "Browser Co")
        key = await issue_key(session, org.id)
        await create_user(session, org.id, email, password)
        return org.id, key.api_key

    org_id, api_key = server.setup(work)
    headers = {"Authorization": f"Bearer {api_key}"}
    with httpx.Client(base_url=server.url + "/v1", headers=headers, timeout=10) as api:
        yield Tenant(org_id, api_key, email, password, api)


@pytest.fixture
def page(browser: Browser, server: Served) -> Iterator[Page]:
    context = browser.new_context(base_url=server.url, viewport={"width": 1100, "height": 800})
    context.set_default_timeout(5000)
    opened = context.new_page()
    opened.on("dialog", lambda dialog: dialog.accept())
    yield opened
    context.close()


def shot(page: Page, name: str) -> None:
    folder = SCREENSHOTS / BACKEND
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def sign_in(page: Page, tenant: Tenant) -> None:
    page.goto("/dashboard/calls")  # the dashboard's first page is the overview (issue 29)
    page.get_by_label("Email").fill(tenant.email)
    page.get_by_label("Password").fill(tenant.password)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Calls", exact=True)).to_be_visible()


def test_sign_in_with_the_keyboard_after_a_wrong_password(page: Page, tenant: Tenant) -> None:
    page.goto("/dashboard/keys")
    expect(page).to_have_url("/dashboard/sign-in?next=%2Fdashboard%2Fkeys")
    shot(page, "sign-in")
    page.get_by_label("Email").fill(tenant.email)
    page.get_by_label("Password").fill("not the password")
    response_status = []
    page.on("response", lambda r: response_status.append(r.status))
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text("The email or password is not right.")
    assert 401 in response_status
    shot(page, "sign-in-wrong-password")
    # Keyboard only: the email is kept, Tab moves to the password, Enter submits.
    expect(page.get_by_label("Email")).to_have_value(tenant.email)
    page.get_by_label("Email").focus()
    page.keyboard.press("Tab")
    page.keyboard.type(tenant.password)
    page.keyboard.press("Enter")
    expect(page).to_have_url("/dashboard/keys")
    expect(page.get_by_role("heading", name="API keys")).to_be_visible()


def test_create_an_api_key_use_it_and_revoke_it(page: Page, tenant: Tenant, server: Served) -> None:
    sign_in(page, tenant)
    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Name of a new key").fill("from the browser")
    page.get_by_role("button", name="Create key").click()
    expect(page.get_by_text("it is shown only this once")).to_be_visible()
    key = page.get_by_label("New API key").input_value()
    assert key.startswith("cp_")
    page.get_by_role("button", name="Copy").click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    shot(page, "keys-created")
    voices = httpx.get(f"{server.url}/v1/voices", headers={"Authorization": f"Bearer {key}"})
    assert voices.status_code == 200

    page.goto("/dashboard/keys")  # the key is never shown again
    expect(page.get_by_text("it is shown only this once")).to_have_count(0)
    page.get_by_role("button", name=re.compile(r"^Revoke key \d+ \(from the browser\)$")).click()
    expect(page.get_by_role("status")).to_contain_text(re.compile(r"Key \d+ revoked"))
    shot(page, "keys-revoked")
    deadline = time.monotonic() + 3  # docs/api-contract.md#identity-and-tenancy: 401 within one
    # second on every process
    while True:
        r = httpx.get(f"{server.url}/v1/voices", headers={"Authorization": f"Bearer {key}"})
        if r.status_code == 401 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert r.status_code == 401
    assert tenant.api.get("/voices").status_code == 200  # the other key still works


def test_a_contact_created_through_the_api_is_on_the_contacts_page(
    page: Page, tenant: Tenant
) -> None:
    body = {"data": {"name": "Dana", "tier": "platinum", "visits": [1, 2]}, "ttlSeconds": 3600}
    assert tenant.api.put("/contacts/+14155550199/data", json=body).status_code == 200
    sign_in(page, tenant)
    page.get_by_role("link", name="Contacts").click()
    expect(page.get_by_text("1 contact with data.")).to_be_visible()
    shot(page, "contacts")
    page.get_by_label("Phone number or identifier").fill("(415) 555-0199")
    page.get_by_role("button", name="Search").click()
    page.get_by_role("link", name="+14155550199").click()
    expect(page.get_by_role("heading", name="+14155550199")).to_be_visible()
    expect(page.get_by_label("Contact data as JSON")).to_contain_text('"tier": "platinum"')
    expect(page.get_by_label("Contact data", exact=True)).to_contain_text("tierplatinum")
    expect(page.locator("dl.facts").first).to_contain_text("Revision")
    shot(page, "contact")


def test_cancel_an_enqueued_call_from_its_page(page: Page, tenant: Tenant) -> None:
    created = tenant.api.post("/calls", json={"to_number": "+14155550177"})
    assert created.status_code == 201
    call_id = created.json()["call_id"]
    sign_in(page, tenant)
    page.get_by_label("Status").select_option("enqueued")
    expect(page.get_by_text("1 call with status enqueued.")).to_be_visible()
    expect(page).to_have_url(
        "/dashboard/calls?status=enqueued&agent=&number="
    )  # htmx kept the URL honest
    page.get_by_role("link", name="UTC").first.click()
    expect(page.get_by_role("heading", name="Call to +14155550177")).to_be_visible()
    shot(page, "call-enqueued")
    page.get_by_role("button", name="Cancel call").click()
    expect(page.locator("h1 .badge")).to_have_text("cancelled")
    expect(page.get_by_role("button", name="Cancel call")).to_have_count(0)
    assert tenant.api.get(f"/calls/{call_id}").json()["call"]["status"] == "cancelled"
    events = tenant.api.get(f"/calls/{call_id}/events").json()["events"]
    assert [e["type"] for e in events][-1] == "call.cancelled"


def test_a_live_call_page_follows_the_call(page: Page, tenant: Tenant) -> None:
    call_id = tenant.api.post("/calls", json={"to_number": "+14155550178"}).json()["call_id"]
    sign_in(page, tenant)
    page.goto(f"/dashboard/calls/{call_id}")
    expect(page.locator("h1 .badge")).to_have_text("enqueued")
    assert tenant.api.post(f"/calls/{call_id}/cancel").status_code == 200
    # No reload: htmx polls the page while the call is live and swaps the news in.
    expect(page.locator("h1 .badge")).to_have_text("cancelled", timeout=8000)
    expect(page.locator("#call-live[hx-trigger]")).to_have_count(0)  # and then stops


def test_edit_a_custom_data_record_and_read_it_back(page: Page, tenant: Tenant) -> None:
    table = {
        "name": "leads",
        "columns": [
            {"name": "name", "type": "TEXT", "required": True},
            {"name": "score", "type": "INTEGER"},
            {"name": "hot", "type": "BOOLEAN"},
        ],
    }
    assert tenant.api.post("/data/tables", json=table).status_code == 201
    rows = [{"name": "Ann", "score": 3, "hot": False}, {"name": "Bo", "score": 9, "hot": True}]
    assert tenant.api.post("/data/leads", json={"records": rows}).status_code == 201
    sign_in(page, tenant)
    page.get_by_role("link", name="Data tables").click()
    shot(page, "tables")
    page.get_by_role("link", name="leads").click()
    page.get_by_label("Sort by").select_option("score")
    page.get_by_label("Order").select_option("asc")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("#records tbody tr").first).to_contain_text("Ann")
    shot(page, "table")
    page.get_by_role("link", name="Edit record 1").click()
    page.get_by_label("score").fill("forty")
    page.get_by_role("button", name="Save record").click()
    expect(page.get_by_role("alert")).to_contain_text("score: must be an integer")
    page.get_by_label("score").fill("40")
    page.get_by_label("hot").select_option("true")
    page.get_by_role("button", name="Save record").click()
    expect(page.get_by_role("status")).to_have_text("Saved.")
    shot(page, "record")
    record = tenant.api.get("/data/leads/1").json()["record"]
    assert (record["name"], record["score"], record["hot"]) == ("Ann", 40, True)


def test_a_form_without_its_csrf_token_is_refused(page: Page, tenant: Tenant) -> None:
    sign_in(page, tenant)
    page.goto("/dashboard/keys")
    page.locator("form[action$='/keys'] input[name=csrf_token]").evaluate("e => e.remove()")
    page.get_by_label("Name of a new key").fill("forged")
    with page.expect_response(lambda r: r.url.endswith("/dashboard/keys")) as answer:
        page.get_by_role("button", name="Create key").click()
    assert answer.value.status == 403
    expect(page.get_by_role("heading", name="Form expired")).to_be_visible()
    shot(page, "csrf-refused")
    page.goto("/dashboard/keys")
    expect(page.get_by_text("forged")).to_have_count(0)


def test_another_organizations_call_is_a_404_page(
    page: Page, tenant: Tenant, server: Served
) -> None:
    async def other_org(session: Any) -> str:
        org = await create_organization(session, "Someone else")
        created = await load_document(
            session, server.settings, org.id, {"calls": [{"to_number": "+14155550100"}]}
        )
        return str(created["calls"][0])

    their_call = server.setup(other_org)
    sign_in(page, tenant)
    response = page.goto(f"/dashboard/calls/{their_call}")
    assert response is not None and response.status == 404
    expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    shot(page, "not-found")


def test_every_page_on_the_demo_data_and_on_a_phone(
    page: Page, tenant: Tenant, server: Served
) -> None:
    async def demo(session: Any) -> dict[str, list[Any]]:
        return await load_document(session, server.settings, tenant.org_id, demo_document())

    created = server.setup(demo)
    sign_in(page, tenant)
    shot(page, "calls")
    page.goto(f"/dashboard/calls/{created['calls'][0]}")
    expect(page.get_by_role("heading", name="Transcript")).to_be_visible()
    shot(page, "call")
    page.goto("/dashboard/calls/new")
    shot(page, "call-new")
    page.get_by_role("link", name="External calls").click()
    expect(page.get_by_text("2 imported calls.")).to_be_visible()
    shot(page, "external-calls")
    page.goto(f"/dashboard/external-calls/{created['external_calls'][0]}")
    expect(page.get_by_role("heading", name="Legs")).to_be_visible()
    shot(page, "external-call")
    page.get_by_role("link", name="Phone numbers").click()
    page.get_by_label("Friendly name of +14155550123").fill("Front desk")
    page.get_by_role("button", name="Rename +14155550123").click()
    expect(page.get_by_role("status")).to_have_text("+14155550123 renamed.")
    expect(page.get_by_label("Friendly name of +14155550123")).to_have_value("Front desk")
    shot(page, "numbers")
    page.get_by_role("link", name="Webhooks").click()
    page.get_by_label("URL").fill("http://127.0.0.1:9/hooks/callplane")
    page.get_by_label("call.ended").check()
    page.get_by_role("button", name="Add endpoint").click()
    expect(page.get_by_label("Signing secret")).to_have_value(re.compile(r"^whsec_"))
    shot(page, "webhooks")
    page.get_by_role("link", name="Deliveries to http://127.0.0.1:9/hooks/callplane").click()
    expect(page.get_by_text("0 attempts.")).to_be_visible()
    shot(page, "webhook-deliveries")
    page.goto("/dashboard/account")
    shot(page, "account")

    page.set_viewport_size({"width": 375, "height": 700})
    for path, name in (
        ("/dashboard/calls", "phone-calls"),
        (f"/dashboard/calls/{created['calls'][0]}", "phone-call"),
        ("/dashboard/data/customers", "phone-table"),
    ):
        page.goto(path)
        # Wide tables scroll inside their own box; the page itself never scrolls sideways.
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, (path, overflow)
        shot(page, name)


def test_typed_addresses_lead_to_the_dashboard_and_a_call_shows_its_timeline(
    page: Page, tenant: Tenant
) -> None:
    for typed in ("/", "/dashboard"):
        page.goto(typed)
        expect(page).to_have_url(re.compile(r"/dashboard/sign-in"))
    sign_in(page, tenant)
    created = tenant.api.post("/calls", json={"to_number": "+14155550100"})
    call_id = created.json()["call_id"]
    assert tenant.api.post(f"/calls/{call_id}/cancel").status_code == 200
    page.goto(f"/dashboard/calls/{call_id}")
    timeline = page.get_by_role("list", name="Events of the call")
    expect(timeline).to_contain_text("call.cancelled")
    expect(page.locator("dl.facts dd").nth(7)).to_have_text("—")
    shot(page, "call-timeline")
