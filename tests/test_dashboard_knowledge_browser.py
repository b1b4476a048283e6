"""The Knowledge page in a real headless Chromium: create a knowledge base, paste a Markdown
document, upload a PDF and a Markdown file, and the search box shows the chunk the agent would
find, with its title path."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests import knowledge_corpus as corpus
from tests.test_dashboard_browser import (  # noqa: F401 - fixtures
    Tenant,
    browser,
    page,
    server,
    shot,
    sign_in,
    tenant,
)

HOURS = """# Opening hours

## Weekends
The shop opens at ten on Saturdays and stays closed on Sundays.
"""


def test_pasted_and_uploaded_documents_are_found_by_the_search_box(
    page: Page,  # noqa: F811
    tenant: Tenant,  # noqa: F811
) -> None:
    sign_in(page, tenant)
    page.get_by_role("link", name="Knowledge").click()
    page.get_by_label("Name").fill("Shop policies")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Shop policies")
    page.get_by_label("Format").select_option("text/markdown")
    page.get_by_label("Text").fill(corpus.RETURNS)
    page.get_by_role("button", name="Add document").click()
    expect(page.get_by_role("status")).to_have_text("Document added.")
    expect(page.get_by_role("cell", name="Returns policy", exact=True)).to_be_visible()
    page.get_by_label("A caller's question").fill("Can I return shoes I have worn?")
    page.get_by_role("button", name="Search").click()
    first = page.locator("article.result h4").first
    expect(first).to_contain_text("Returns policy › Shoes")
    expect(page.locator("article.result p").first).to_contain_text("repaired under the warranty")
    shot(page, "knowledge-search")

    rules = corpus.pdf("The boiler is serviced every autumn.\nCall the caretaker for a key.")
    files = [
        ("rules.pdf", "application/pdf", rules, "rules"),
        # Browsers often declare a Markdown file as octet-stream: its name says what it is.
        ("hours.md", "application/octet-stream", HOURS.encode(), "Opening hours"),
    ]
    for name, mime, buffer, title in files:
        page.get_by_label("File").set_input_files(
            {"name": name, "mimeType": mime, "buffer": buffer}
        )
        page.get_by_role("button", name="Add document").click()
        expect(page.get_by_role("status")).to_have_text("Document added.")
        expect(page.get_by_role("cell", name=title, exact=True)).to_be_visible()
    expect(page.get_by_role("cell", name="application/pdf", exact=True)).to_be_visible()
    for question, found, says in [
        ("Who services the boiler?", "rules", "caretaker"),
        ("Are you open on Saturday?", "Opening hours › Weekends", "opens at ten"),
    ]:
        page.get_by_label("A caller's question").fill(question)
        page.get_by_role("button", name="Search").click()
        expect(page.locator("article.result h4").first).to_contain_text(found)
        expect(page.locator("article.result p").first).to_contain_text(says)
    bases = tenant.api.get("/knowledge_bases").json()["knowledge_bases"]
    assert [b["document_count"] for b in bases] == [3]
