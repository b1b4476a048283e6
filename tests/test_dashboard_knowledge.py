"""The dashboard's Knowledge page: create a knowledge base, paste a document, search it as the
agent would, delete; another organization's knowledge base is not found."""

from __future__ import annotations

import re

from tests import knowledge_corpus as corpus
from tests.dashboard_support import browser_client, csrf_of, make_person, sign_in
from tests.factories import make_org


async def test_knowledge_bases_documents_and_the_search_box(app):
    org = await make_org(app)
    person = await make_person(app, org)
    async with browser_client(app) as c:
        await sign_in(c, person.email, person.password)
        page = await c.get("/dashboard/knowledge")
        assert page.status_code == 200 and "No knowledge bases yet" in page.text
        assert 'href="/dashboard/knowledge" aria-current="page"' in page.text
        token = csrf_of(page)
        bad = await c.post("/dashboard/knowledge", data={"csrf_token": token, "name": ""})
        assert bad.status_code == 422 and "was not created" in bad.text
        made = await c.post(
            "/dashboard/knowledge", data={"csrf_token": token, "name": "Shop", "language": "en"}
        )
        assert made.status_code == 303
        where = made.headers["location"]
        base_id = where.rsplit("/", 1)[1]
        page = await c.get(where)
        assert page.status_code == 200 and "No documents yet" in page.text

        empty = await c.post(
            f"{where}/documents", data={"csrf_token": token, "text": "  ", "format": "text/plain"}
        )
        assert empty.status_code == 422 and "was not added" in empty.text
        added = await c.post(
            f"{where}/documents",
            data={
                "csrf_token": token,
                "text": corpus.RETURNS,
                "format": "text/markdown",
                "url": "https://shop.example.com/returns",
            },
        )
        assert added.status_code == 303
        page = await c.get(added.headers["location"])
        assert "Document added." in page.text and "Returns policy" in page.text
        assert 'href="https://shop.example.com/returns"' in page.text

        found = await c.get(where, params={"q": "Can I return worn shoes?"})
        assert found.status_code == 200
        titles = re.findall(r"<h4>(.*?) <span", found.text)
        assert titles[0] == "Returns policy › Shoes"
        assert "repaired under the warranty" in found.text and "score " in found.text
        api = await c.post(
            f"/v1/knowledge_bases/{base_id}/search",
            json={"query": "Can I return worn shoes?"},
            headers=org.headers,
        )
        assert [r["title"] for r in api.json()["results"]] == titles  # what the agent finds

        [document] = (
            await c.get(f"/v1/knowledge_bases/{base_id}/documents", headers=org.headers)
        ).json()["documents"]
        gone = await c.post(
            f"{where}/documents/{document['id']}/delete", data={"csrf_token": token}
        )
        assert gone.status_code == 303
        assert "Document deleted." in (await c.get(gone.headers["location"])).text
        found = await c.get(where, params={"q": "shoes"})
        assert "Nothing found" in found.text

        other = await make_org(app, "Other")
        theirs = (
            await c.post("/v1/knowledge_bases", json={"name": "Theirs"}, headers=other.headers)
        ).json()["knowledge_base"]["id"]
        assert (await c.get(f"/dashboard/knowledge/{theirs}")).status_code == 404
        refused = await c.post(f"/dashboard/knowledge/{theirs}/delete", data={"csrf_token": token})
        assert refused.status_code == 404
        assert (
            await c.get(f"/v1/knowledge_bases/{theirs}", headers=other.headers)
        ).status_code == 200

        removed = await c.post(f"{where}/delete", data={"csrf_token": token})
        assert removed.status_code == 303
        assert "No knowledge bases yet" in (await c.get("/dashboard/knowledge")).text
