"""The calls list's Agent column and filters, and a call's agent line, in Chromium (issue 40)."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from callplane.loader import load_document
from tests import test_dashboard_browser as shared

server, browser, tenant, page = shared.server, shared.browser, shared.tenant, shared.page
Tenant, shot = shared.Tenant, shared.shot


def test_a_call_names_its_agent_and_the_list_filters_by_agent(
    page: Page, tenant: shared.Tenant
) -> None:
    agent = tenant.api.post("/agents", json={"name": "Riley", "config": {"first_message": "Hi."}})
    assert agent.status_code == 201, agent.text
    agent_id = agent.json()["agent"]["id"]
    made = tenant.api.post(
        f"/agents/{agent_id}/commits",
        json={"message": "Friendlier greeting", "changes": {"first_message": "Hello!"}},
    )
    assert made.status_code == 201, made.text
    called = tenant.api.post("/calls", json={"to_number": "+14155550130", "agent_id": agent_id})
    assert called.status_code == 201, called.text
    tenant.api.post("/calls", json={"to_number": "+14155550131"})
    shared.sign_in(page, tenant)
    page.get_by_label("Agent").select_option(label="Riley")
    expect(page.get_by_text("1 call.")).to_be_visible()
    row = page.get_by_role("row").filter(has_text="+14155550130")
    expect(row.get_by_role("link", name="Riley")).to_be_visible()
    shot(page, "calls-filtered-by-agent")
    row.get_by_role("link").first.click()
    line = page.locator("#call-agent")
    expect(line).to_contain_text("Riley on branch main, commit")
    expect(line).to_contain_text("Friendlier greeting")
    shot(page, "call-agent")
    line.get_by_role("link", name="Riley").click()
    expect(page.get_by_role("heading", name="Riley")).to_be_visible()
    # "Place a call" picks the agent, then one of its branches (another agent's are not offered).
    beta = tenant.api.post(f"/agents/{agent_id}/branches", json={"name": "beta", "from": "main"})
    assert beta.status_code == 201, beta.text
    other = tenant.api.post("/agents", json={"name": "Sam", "config": {}}).json()["agent"]
    assert tenant.api.post(f"/agents/{other['id']}/branches", json={"name": "sams"}).is_success
    page.goto("/dashboard/calls/new")
    page.get_by_label("To (phone number)").fill("+14155550132")
    page.get_by_label("Agent (optional").select_option(label="Riley")
    branch = page.get_by_label("Branch (with an agent)")
    expect(branch.locator("optgroup[label=Sam]")).to_be_hidden()
    branch.select_option("beta")
    shot(page, "call-new-agent-branch")
    page.get_by_role("button", name="Place call").click()
    expect(page.locator("#call-agent")).to_contain_text("Riley on branch beta")


def test_analysis_results_read_as_fields(page: Page, tenant: shared.Tenant, server: Any) -> None:
    answered = {
        "to_number": "+14155550160",
        "status": "completed",
        "summary": "The caller moved their cleaning to Friday at nine.",
        "analysis_results": [
            {"prompt": "How did the caller feel?", "result": {"sentiment": "positive"}},
            {"prompt": "Was it booked?", "result": {"booked": True, "day": "Friday"}},
        ],
    }

    async def work(session: Any) -> list[Any]:
        created = await load_document(
            session, server.settings, tenant.org_id, {"calls": [answered]}
        )
        return list(created["calls"])

    [call_id] = server.setup(work)
    shared.sign_in(page, tenant)
    page.goto(f"/dashboard/calls/{call_id}")
    feeling = page.get_by_role("region", name="How did the caller feel?")
    expect(feeling).to_contain_text("sentiment")
    expect(feeling).to_contain_text("positive")
    expect(page.get_by_role("region", name="Was it booked?")).to_contain_text("yes")
    shot(page, "call-analysis")


def test_the_agent_page_has_a_test_chat_beside_the_editor(
    page: Page, tenant: shared.Tenant
) -> None:
    made = tenant.api.post(
        "/agents",
        json={"name": "Ada", "config": {"first_message": "Hi, Ada here.", "prompt": "Be kind."}},
    )
    assert made.status_code == 201, made.text
    page.set_viewport_size({"width": 1400, "height": 900})
    shared.sign_in(page, tenant)
    page.goto(f"/dashboard/agents/{made.json()['agent']['id']}")
    chat = page.get_by_role("region", name="Test chat with main")
    editor = page.get_by_role("region", name="Edit and commit")
    # Side by side on a wide screen.
    chat_box, editor_box = chat.bounding_box(), editor.bounding_box()
    assert chat_box is not None and editor_box is not None
    assert chat_box["x"] > editor_box["x"] + editor_box["width"] - 1
    chat.get_by_role("button", name="Start", exact=True).click()
    expect(chat).to_contain_text("Agent: Hi, Ada here.")
    chat.get_by_label("You say").fill("Hello?")
    chat.get_by_role("button", name="Send").click()
    expect(chat).to_contain_text("Caller: Hello?")
    expect(chat).to_contain_text("Give the agent a brain")  # this server has none
    expect(page.get_by_text("The first configuration")).to_be_visible()
    shot(page, "agent-studio")
    # The voice's play button plays the voice chosen, before it is committed.
    voice = tenant.api.post("/voices", json={"name": "Vera", "engine": "espeak-ng:en-us"})
    assert voice.status_code == 201, voice.text
    page.reload()
    player = page.get_by_label("A preview of the agent's voice")
    expect(player).to_be_hidden()
    page.get_by_label("Voice (all voices)").select_option(label="Vera")
    expect(player).to_be_visible()
    expect(player).to_have_attribute("src", f"/dashboard/voices/{voice.json()['id']}/preview")
    # The Voices page, from the editor: each voice's player really plays (Chromium decodes it).
    page.get_by_role("link", name="(all voices)").click()
    expect(page.get_by_role("heading", name="Voices")).to_be_visible()
    vera = page.get_by_label("Play Vera")
    seconds = vera.evaluate(
        "a => new Promise((ok, fail) => { a.onloadedmetadata = () => ok(a.duration);"
        " a.onerror = () => fail(String(a.error && a.error.code)); a.load(); })"
    )
    assert seconds > 0.5, seconds
    shot(page, "voices")


def test_a_tool_is_built_with_a_form_and_committed(page: Page, tenant: shared.Tenant) -> None:
    made = tenant.api.post("/agents", json={"name": "Tess", "config": {"first_message": "Hi."}})
    assert made.status_code == 201, made.text
    agent_id = made.json()["agent"]["id"]
    page.set_viewport_size({"width": 1400, "height": 900})
    shared.sign_in(page, tenant)
    page.goto(f"/dashboard/agents/{agent_id}")
    page.get_by_label("Add a tool").select_option("transfer_call")
    page.get_by_role("button", name="Add tool").click()  # htmx: only the tools' part changes
    card = page.get_by_role("group", name="Tool tools/0: transfer_call")
    card.get_by_label("name", exact=True).fill("to_front_desk")
    card.get_by_label("name of row 1").fill("front desk")
    card.get_by_label("number of row 1").fill("+14155550199")
    expect(page.locator("#config-check")).to_contain_text("The config is valid.")
    shot(page, "agent-tool-form")
    # The JSON one click away, the form's values in it; and back to the forms.
    page.get_by_role("button", name="Edit the tools as JSON").click()
    expect(page.locator("#tools")).to_contain_text('"number": "+14155550199"')
    page.locator("#tools").fill(page.locator("#tools").input_value().replace("front desk", "desk"))
    page.get_by_role("button", name="Edit the tools with forms").click()
    expect(card.get_by_label("name of row 1")).to_have_value("desk")
    expect(card.get_by_label("name of row 2")).to_have_value("")  # a blank row to add one
    page.get_by_label("Commit message").fill("A transfer to the front desk")
    page.get_by_role("button", name="Commit to main").click()
    expect(page.get_by_role("status")).to_contain_text("Committed.")
    # The committed tool is edited in its form too.
    card = page.get_by_role("group", name="Tool tools/0: transfer_call to_front_desk")
    expect(card.get_by_label("number of row 1")).to_have_value("+14155550199")
    shot(page, "agent-tool-committed")
    commits = tenant.api.get(f"/agents/{agent_id}/commits").json()["commits"]
    assert commits[0]["message"] == "A transfer to the front desk"
    head = tenant.api.get(f"/agents/{agent_id}/commits/{commits[0]['id']}").json()["commit"]
    assert head["config"]["tools"] == [
        {
            "type": "transfer_call",
            "name": "to_front_desk",
            "destinations": [{"name": "desk", "number": "+14155550199"}],
        }
    ]
