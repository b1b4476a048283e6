"""The dashboard's Knowledge page: create a knowledge base, paste a document, search it as the
agent would, delete; another organization's knowledge base is not found."""

from __future__ import annotations

import re

from tests import knowledge_corpus as corpus
from tests.dashboard_support import browser_client, csrf_of, make_person, sign_in
from tests.factories import OrgHandle, make_org


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


async def _signed_in_base(app, c) -> tuple[OrgHandle, str, str]:
    org = await make_org(app)
    person = await make_person(app, org)
    await sign_in(c, person.email, person.password)
    token = csrf_of(await c.get("/dashboard/knowledge"))
    made = await c.post("/dashboard/knowledge", data={"csrf_token": token, "name": "Files"})
    assert made.status_code == 303
    return org, made.headers["location"], token


async def _documents(c, org: OrgHandle, where: str) -> int:
    base_id = where.rsplit("/", 1)[1]
    listed = await c.get(f"/v1/knowledge_bases/{base_id}/documents", headers=org.headers)
    return int(listed.json()["total_count"])


async def test_files_are_uploaded_and_read_as_the_api_reads_them(app):
    async with browser_client(app) as c:
        org, where, token = await _signed_in_base(app, c)
        # A browser may declare a Markdown file as octet-stream: its name decides.
        markdown = await c.post(
            f"{where}/documents",
            data={"csrf_token": token},
            files={"file": ("returns.md", corpus.RETURNS.encode(), "application/octet-stream")},
        )
        assert markdown.status_code == 303, markdown.text
        pdf = corpus.pdf("The boiler is serviced every autumn.\nCall the caretaker for a key.")
        added = await c.post(
            f"{where}/documents",
            data={"title": "House rules"},
            files={"file": ("rules.pdf", pdf, "application/pdf")},
            headers={"X-CSRF-Token": token},  # as htmx sends it
        )
        assert added.status_code == 303, added.text
        page = await c.get(added.headers["location"])
        assert "Document added." in page.text and "House rules" in page.text
        assert "text/markdown" in page.text and "application/pdf" in page.text
        found = await c.get(where, params={"q": "who services the boiler"})
        assert re.findall(r"<h4>(.*?) <span", found.text)[0] == "House rules"
        found = await c.get(where, params={"q": "worn shoes"})
        assert re.findall(r"<h4>(.*?) <span", found.text)[0] == "Returns policy › Shoes"
        for typed in ('"worn shoes', "NEAR(worn shoes)", "shoe*", "-worn shoes", "(("):
            found = await c.get(where, params={"q": typed})  # words, never a query language
            assert found.status_code == 200, typed

        for name, body, says in [
            ("scan.pdf", corpus.pdf(), "no text to index"),
            ("locked.pdf", corpus.pdf("Hidden", encrypt=True), "encrypted"),
            ("picture.png", b"\x89PNG", "must be text"),
            ("empty.txt", b"  ", "empty"),
        ]:
            refused = await c.post(
                f"{where}/documents",
                data={"csrf_token": token},
                files={"file": (name, body, "application/octet-stream")},
            )
            assert refused.status_code == 422 and "was not added" in refused.text, name
            assert says in refused.text, (name, refused.text)
        assert await _documents(c, org, where) == 2  # none of the refused ones


async def test_a_multipart_post_without_the_right_token_is_refused_before_it_is_read(app):
    async with browser_client(app) as c:
        org, where, token = await _signed_in_base(app, c)
        file = {"file": ("notes.txt", b"The gate code is 4711.", "text/plain")}
        for data, headers in [
            ({}, {}),
            ({"csrf_token": "forged"}, {}),
            ({"csrf_token": token}, {"X-CSRF-Token": "forged"}),
        ]:
            refused = await c.post(f"{where}/documents", data=data, files=file, headers=headers)
            assert refused.status_code == 403 and "Form expired" in refused.text
        assert await _documents(c, org, where) == 0
        # Declared too large: refused before a byte of it is read.
        huge = await c.post(
            f"{where}/documents",
            content=b"x",
            headers={
                "content-type": "multipart/form-data; boundary=x",
                "content-length": "99999999",
            },
        )
        assert huge.status_code == 413

        async def endless():  # no Content-Length: the limit holds as the body arrives
            yield b"csrf_token=" + token.encode() + b"&name="
            for _ in range(2048):
                yield b"x" * 1024

        streamed = await c.post(
            "/dashboard/knowledge",
            content=endless(),
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert streamed.status_code == 413
    async with browser_client(app) as stranger:
        anonymous = await stranger.post(f"{where}/documents", files=file)
        assert anonymous.status_code == 303 and "/sign-in" in anonymous.headers["location"]
        assert await _documents(stranger, org, where) == 0
