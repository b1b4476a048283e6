"""The Campaigns page in a real headless Chromium: a CSV file chosen, previewed (first rows and
the rejected one), the campaign created, its funnel, started and paused."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from tests.test_dashboard_browser import (  # noqa: F401 - fixtures
    Tenant,
    browser,
    page,
    server,
    shot,
    sign_in,
    tenant,
)

CSV = "phone_number,first_name\n+15550001000,Ann\nnot a number,Bob\n+15550001001,Cy\n"


def test_create_a_campaign_from_a_csv_file(page: Page, tenant: Tenant, tmp_path: Path) -> None:  # noqa: F811
    agent = tenant.api.post("/agents", json={"name": "Reminders"})
    assert agent.status_code == 201
    upload = tmp_path / "people.csv"
    upload.write_text(CSV)
    sign_in(page, tenant)
    page.get_by_role("link", name="Campaigns").click()
    expect(page.get_by_role("heading", name="Campaigns", exact=True)).to_be_visible()
    page.get_by_label("Name").fill("Spring reminders")
    page.get_by_label("CSV file").set_input_files(str(upload))
    expect(page.get_by_label("… or paste it")).to_have_value(CSV)
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_role("heading", name="2 rows to add, 1 rejected")).to_be_visible()
    expect(page.get_by_role("table", name="First rows")).to_contain_text("+15550001001")
    expect(page.get_by_role("table", name="Rejected rows")).to_contain_text("phone_number")
    shot(page, "campaign-preview")
    page.get_by_role("button", name="Create campaign").click()
    expect(page.get_by_role("status")).to_have_text(
        "Campaign created with 2 recipients (1 rows rejected)."
    )
    funnel = page.get_by_role("table", name="Recipients by status")
    expect(funnel).to_contain_text("queued")
    page.get_by_role("button", name="Start").click()
    expect(page.get_by_role("heading", name="Spring reminders running")).to_be_visible()
    page.get_by_role("button", name="Pause").click()
    expect(page.get_by_role("heading", name="Spring reminders paused")).to_be_visible()
    shot(page, "campaign-paused")
    listed = tenant.api.get("/campaigns").json()["campaigns"]
    assert [(c["name"], c["status"], c["counts"]["total"]) for c in listed] == [
        ("Spring reminders", "paused", 2)
    ]
