"""The Agents page in a real headless Chromium: edit → commit → diff → rollback."""

from __future__ import annotations

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


def test_edit_commit_diff_and_roll_back_an_agent(page: Page, tenant: Tenant) -> None:  # noqa: F811
    created = tenant.api.post(
        "/agents",
        json={"name": "Riley", "config": {"prompt": "You are Riley.", "first_message": "Hi!"}},
    )
    assert created.status_code == 201
    sign_in(page, tenant)
    page.get_by_role("link", name="Agents").click()
    page.get_by_role("link", name="Riley").click()
    expect(page.get_by_role("heading", name="Riley on branch main")).to_be_visible()
    page.get_by_label("First message").fill("Hello {{name|there}}, Riley here!")
    page.get_by_label("Commit message").fill("Warmer greeting")
    page.get_by_role("button", name="Commit to main").click()
    expect(page.get_by_role("status")).to_have_text("Committed.")
    diff = page.get_by_role("table", name="Changes of commit").first
    expect(diff).to_contain_text("/first_message")
    expect(diff).to_contain_text("Hi!")
    expect(diff).to_contain_text("Hello {{name|there}}, Riley here!")
    shot(page, "agent-committed")
    page.get_by_role("button", name="Roll back main to").last.click()
    expect(page.get_by_role("status")).to_have_text("Rolled back.")
    expect(page.get_by_label("First message")).to_have_value("Hi!")
    agent = tenant.api.get(f"/agents/{created.json()['agent']['id']}").json()["agent"]
    assert agent["config"]["first_message"] == "Hi!"
    history = tenant.api.get(f"/agents/{agent['id']}/commits").json()
    assert history["total_count"] == 3
    shot(page, "agent-rolled-back")
