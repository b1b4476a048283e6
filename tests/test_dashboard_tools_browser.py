"""The agent editor's tools in a real headless Chromium: a broken tool is reported by its JSON
path as one types (htmx) and on commit, the text stays, and nothing is committed."""

from __future__ import annotations

import time

from playwright.sync_api import Page, Route, expect

from tests.test_dashboard_browser import (  # noqa: F401 - fixtures
    Tenant,
    browser,
    page,
    server,
    shot,
    sign_in,
    tenant,
)

BROKEN = (
    '[{"type": "function", "name": "lookup", "url": "https://example.com",'
    ' "parameters": {"type": "object", "properties": {"id": {"type": 12}}}}]'
)


def test_the_tool_editor_reports_a_broken_schema_and_commits_nothing(
    page: Page,  # noqa: F811
    tenant: Tenant,  # noqa: F811
) -> None:
    created = tenant.api.post(
        "/agents", json={"name": "Riley", "config": {"prompt": "You are Riley."}}
    )
    assert created.status_code == 201
    agent_id = created.json()["agent"]["id"]
    sign_in(page, tenant)
    page.get_by_role("link", name="Agents").click()
    page.get_by_role("link", name="Riley").click()
    page.get_by_role("button", name="Edit the tools as JSON").click()
    tools = page.get_by_label("Tools (JSON)")
    tools.fill(BROKEN)
    # The live check, as one types.
    check = page.locator("#config-check")
    expect(check).to_contain_text("config/tools/0/parameters: is not a valid JSON Schema")
    shot(page, "agent-tools-checked")
    page.get_by_label("Commit message").fill("Broken lookup")
    page.get_by_role("button", name="Commit to main").click()
    alert = page.get_by_role("alert").first
    expect(alert).to_contain_text("config/tools/0/parameters")
    expect(page.get_by_label("Tools (JSON)")).to_have_value(BROKEN)  # still JSON, as typed
    history = tenant.api.get(f"/agents/{agent_id}/commits").json()
    assert history["total_count"] == 1
    page.get_by_label("Tools (JSON)").fill('[{"type": "send_dtmf"}]')
    expect(check).to_contain_text("The config is valid.")
    page.get_by_role("button", name="Commit to main").click()
    expect(page.get_by_role("status")).to_have_text("Committed.")
    assert tenant.api.get(f"/agents/{agent_id}/commits").json()["total_count"] == 2
    # In the forms, a problem is also shown beside its field, filled and cleared as one types.
    page.get_by_label("Add a tool").select_option("function")
    page.get_by_role("button", name="Add tool").click()
    page.locator("#tool-1-name").fill("lookup")
    beside = page.locator("#tool-1-url-error")
    expect(beside).to_have_text("is required")
    expect(page.locator("#tool-1-url")).to_have_attribute("aria-invalid", "true")
    shot(page, "agent-tools-error-beside-field")
    page.locator("#tool-1-url").fill("https://shop.example.com/orders")
    expect(check).to_contain_text("The config is valid.")
    expect(beside).to_be_empty()


def test_a_check_due_after_a_tools_button_is_still_a_check(
    page: Page,  # noqa: F811
    tenant: Tenant,  # noqa: F811
) -> None:
    """Typing schedules the live check; a tools button clicked before it is sent (its own
    request, its own ``formaction``) must not become the check's action: the check still only
    checks, and the button's action runs once."""
    created = tenant.api.post("/agents", json={"name": "Quinn", "config": {"prompt": "Hi."}})
    assert created.status_code == 201
    sign_in(page, tenant)
    page.goto(f"/dashboard/agents/{created.json()['agent']['id']}")
    page.get_by_label("Add a tool").select_option("send_dtmf")

    def slowly(route: Route) -> None:  # a busy server: the check is sent before this answers
        time.sleep(1.2)
        route.continue_()

    page.route("**/tools", slowly)
    page.get_by_label("Prompt (with {{variables}})").fill("Hello there.")  # the check is due
    page.get_by_role("button", name="Add tool").click()  # before it is sent
    check = page.locator("#config-check")
    expect(check).to_contain_text("The config is valid.")
    page.wait_for_timeout(1500)  # past the check's delay, whatever it did has been swapped in
    expect(check).to_contain_text("The config is valid.")
    expect(check.locator("#tools-editor")).to_have_count(0)
    expect(page.locator("#tools-editor")).to_have_count(1)
    expect(page.get_by_role("group", name="Tool tools/0: send_dtmf")).to_have_count(1)
    expect(page.get_by_role("group", name="Tool tools/1: send_dtmf")).to_have_count(0)
