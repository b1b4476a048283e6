"""The Agents page in a real headless Chromium: edit → commit → diff → rollback, then a branch,
a commit on it, a merge conflict shown, resolved and merged."""

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
    # A branch, a commit on it and another on main: the merge names the conflict.
    page.get_by_label("New branch from main").fill("warmer")
    page.get_by_role("button", name="Create branch").click()
    expect(page.get_by_role("heading", name="Riley on branch warmer")).to_be_visible()
    page.get_by_label("First message").fill("Hello, lovely to hear from you!")
    page.get_by_label("Commit message").fill("Warmer still")
    page.get_by_role("button", name="Commit to warmer").click()
    expect(page.get_by_role("status")).to_have_text("Committed.")
    branches = page.get_by_role("table", name="Branches of Riley")
    expect(branches.get_by_role("row", name="warmer")).to_contain_text("1 commit to merge")
    branches.get_by_role("link", name="main").click()
    page.get_by_label("First message").fill("Hi, Riley speaking.")
    page.get_by_role("button", name="Commit to main").click()
    expect(page.get_by_role("status")).to_have_text("Committed.")
    page.get_by_role("link", name="warmer").click()
    page.get_by_role("button", name="Merge warmer").click()
    conflict = page.get_by_role("region", name="Merge conflict")
    expect(conflict).to_contain_text("/first_message")
    expect(conflict).to_contain_text("Hi, Riley speaking.")
    expect(conflict).to_contain_text("Hello, lovely to hear from you!")
    expect(page.get_by_role("alert")).to_contain_text("both changed the same setting")
    shot(page, "agent-merge-conflict")
    # Resolved on the branch (main's value kept), the merge goes through.
    page.get_by_label("First message").fill("Hi, Riley speaking.")
    page.get_by_role("button", name="Commit to warmer").click()
    page.get_by_role("button", name="Merge warmer").click()
    expect(page.get_by_role("status")).to_have_text("Merged warmer into main.")
    expect(page.get_by_role("heading", name="Riley on branch main")).to_be_visible()
    expect(page.get_by_role("list").get_by_text("Merge branch warmer into main")).to_be_visible()
