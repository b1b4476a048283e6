"""Knowledge bases over HTTP (docs/knowledge.md): documents of every type, search on both
databases agreeing on a corpus of our own, tenancy, deletion, and hostile input."""

from __future__ import annotations

import pytest

from tests import knowledge_corpus as corpus
from tests.factories import OrgHandle, make_org

BAD = {"status": "error", "success": False}


async def _base(client, org: OrgHandle, language: str = "en", name: str = "Help desk") -> str:
    response = await client.post(
        "/v1/knowledge_bases", json={"name": name, "language": language}, headers=org.headers
    )
    assert response.status_code == 201, response.text
    return response.json()["knowledge_base"]["id"]


async def _upload(client, org, base, body, content_type, **query) -> dict:
    response = await client.post(
        f"/v1/knowledge_bases/{base}/documents",
        content=body,
        headers={**org.headers, "content-type": content_type},
        params=query,
    )
    assert response.status_code == 201, response.text
    return response.json()["document"]


async def _search(client, org, base, query, top_k=3):
    response = await client.post(
        f"/v1/knowledge_bases/{base}/search",
        json={"query": query, "top_k": top_k},
        headers=org.headers,
    )
    assert response.status_code == 200, response.text
    return response.json()["results"]


async def _corpus(client, org) -> str:
    base = await _base(client, org)
    await _upload(client, org, base, corpus.RETURNS, "text/markdown")
    await _upload(client, org, base, corpus.CLINIC, "text/html")
    response = await client.post(
        f"/v1/knowledge_bases/{base}/documents",
        json={"title": "Garden notes", "text": corpus.GARDEN, "url": "https://example.com/g"},
        headers=org.headers,
    )
    assert response.status_code == 201, response.text
    return base


async def test_a_knowledge_base_is_created_listed_read_and_deleted(app, client):
    org = await make_org(app)
    base = await _base(client, org, language="es-US", name="Ayuda")
    listed = (await client.get("/v1/knowledge_bases", headers=org.headers)).json()
    assert listed["total_count"] == 1 and listed["knowledge_bases"][0]["id"] == base
    one = (await client.get(f"/v1/knowledge_bases/{base}", headers=org.headers)).json()
    assert one["knowledge_base"]["language"] == "es-US"
    assert one["knowledge_base"]["document_count"] == 0
    assert (await client.delete(f"/v1/knowledge_bases/{base}", headers=org.headers)).json() == {
        "success": True
    }
    gone = await client.get(f"/v1/knowledge_bases/{base}", headers=org.headers)
    assert gone.status_code == 404 and gone.json()["error"] == "Knowledge base not found"


async def test_the_same_corpus_ranks_the_same_on_both_databases(app, client):
    org = await make_org(app)
    base = await _corpus(client, org)
    for query, title in corpus.EXPECTED_TOP.items():
        results = await _search(client, org, base, query)
        assert results, query
        assert results[0]["title"] == title, (query, results)
        scores = [r["score"] for r in results]
        assert scores == sorted(scores, reverse=True) and scores[0] > 0


async def test_documents_are_split_with_their_title_path_and_html_is_stripped(app, client):
    org = await make_org(app)
    base = await _base(client, org)
    html = await _upload(client, org, base, corpus.CLINIC, "text/html")
    assert html["title"] == "Clinic price list" and html["chunk_count"] == 3
    assert html["content_type"] == "text/html"
    for hidden in ("tracking pixel", "secret", "color"):
        assert await _search(client, org, base, hidden) == []
    [child] = await _search(client, org, base, "children twelve", top_k=1)
    assert child["title"] == "Clinic price list › Dental care › Children"
    assert child["text"] == "Children under twelve are seen by the dentist free of charge."
    listed = (await client.get(f"/v1/knowledge_bases/{base}/documents", headers=org.headers)).json()
    assert [d["id"] for d in listed["documents"]] == [html["id"]]
    one = await client.get(
        f"/v1/knowledge_bases/{base}/documents/{html['id']}", headers=org.headers
    )
    assert one.json()["document"] == html


async def test_a_long_document_is_cut_into_chunks_of_about_a_thousand_characters(app, client):
    org = await make_org(app)
    base = await _base(client, org)
    sentence = "The warranty covers the zipper and the sole for two years. "
    document = await _upload(client, org, base, sentence * 200, "text/plain", title="Warranty")
    assert document["title"] == "Warranty" and document["chunk_count"] >= 10
    found = await _search(client, org, base, "zipper warranty", top_k=20)
    assert len(found) == document["chunk_count"] and all(
        800 <= len(r["text"]) <= 1000 for r in found[:-1]
    )
    assert all(r["text"].endswith("years.") for r in found)


async def test_twenty_megabytes_of_one_line_chunks_sanely(app, client):
    org = await make_org(app)
    base = await _base(client, org)
    line = ("x" * 9 + " ") * (2 * 1024 * 1024 - 1)  # just under 20 MB, no full stop, no newline
    document = await _upload(client, org, base, line.encode(), "text/plain")
    assert 16_000 < document["chunk_count"] < 25_000
    [hit] = await _search(client, org, base, "xxxxxxxxx", top_k=1)
    assert 600 < len(hit["text"]) <= 1200
    too_big = await client.post(
        f"/v1/knowledge_bases/{base}/documents",
        content=b"y" * (20 * 1024 * 1024 + 1),
        headers={**org.headers, "content-type": "text/plain"},
    )
    assert too_big.status_code == 413 and too_big.json()["success"] is False


async def test_a_deleted_document_is_gone_from_search_at_once(app, client):
    org = await make_org(app)
    base = await _corpus(client, org)
    [hit] = await _search(client, org, base, "orchids", top_k=1)
    deleted = await client.delete(
        f"/v1/knowledge_bases/{base}/documents/{hit['document_id']}", headers=org.headers
    )
    assert deleted.json() == {"success": True}
    assert await _search(client, org, base, "orchids") == []
    assert await _search(client, org, base, "dentist")  # the others stay
    again = await client.delete(
        f"/v1/knowledge_bases/{base}/documents/{hit['document_id']}", headers=org.headers
    )
    assert again.status_code == 404
    await client.delete(f"/v1/knowledge_bases/{base}", headers=org.headers)
    other = await _corpus(client, org)
    assert [r["title"] for r in await _search(client, org, other, "orchids")] == ["Garden notes"]


async def test_a_search_ranks_a_bounded_set_that_keeps_the_rare_words(app, client, monkeypatch):
    """Both databases rank only the chunks holding the question's rarest words when a word is
    common (here: beyond a budget of 10 chunks); the best answer must survive that with the
    score it has when every match is ranked (the common words still count), a question of
    common words only still finds chunks, and a deleted document's words stop counting."""
    from callplane.knowledge import search

    monkeypatch.setattr(search, "RANK_BUDGET", 10)
    org = await make_org(app)
    base = await _base(client, org)
    notes = "".join(
        f"# Depot {n}\nParcels are collected at depot {n} daily.\n\n" for n in range(14)
    )
    await _upload(client, org, base, notes, "text/markdown", title="Depots")
    zebra = await _upload(
        client, org, base, "# Zebra crossing\nParcels wait at the zebra crossing.", "text/markdown"
    )
    [best, *_] = await _search(client, org, base, "parcels zebra collected", top_k=3)
    assert best["title"] == "Zebra crossing" and best["document_id"] == zebra["id"]
    monkeypatch.setattr(search, "RANK_BUDGET", 1_000)
    [unbounded, *_] = await _search(client, org, base, "parcels zebra collected", top_k=3)
    assert unbounded == best
    monkeypatch.setattr(search, "RANK_BUDGET", 10)
    common = await _search(client, org, base, "parcels daily", top_k=5)
    assert len(common) == 5 and all("daily" in r["text"] for r in common)
    await client.delete(f"/v1/knowledge_bases/{base}/documents/{zebra['id']}", headers=org.headers)
    assert await _search(client, org, base, "zebra") == []
    assert len(await _search(client, org, base, "parcels", top_k=20)) == 14
    # A word rare in the database but held only by another knowledge base's chunks does not
    # narrow this one's candidates to nothing.
    other = await _base(client, org, name="Zoo")
    await _upload(
        client, org, other, "# Giraffe\nParcels reach the giraffe house.", "text/markdown"
    )
    found = await _search(client, org, base, "parcels giraffe", top_k=5)
    assert len(found) == 5 and all("depot" in r["text"] for r in found)


async def test_another_organizations_knowledge_base_is_not_found(app, client):
    owner, stranger = await make_org(app, "Owner"), await make_org(app, "Stranger")
    base = await _corpus(client, owner)
    mine = await _base(client, stranger)
    documents = (
        await client.get(f"/v1/knowledge_bases/{base}/documents", headers=owner.headers)
    ).json()["documents"]
    document = documents[0]["id"]
    requests = [
        ("GET", f"/v1/knowledge_bases/{base}", None),
        ("DELETE", f"/v1/knowledge_bases/{base}", None),
        ("GET", f"/v1/knowledge_bases/{base}/documents", None),
        ("GET", f"/v1/knowledge_bases/{base}/documents/{document}", None),
        ("DELETE", f"/v1/knowledge_bases/{base}/documents/{document}", None),
        ("GET", f"/v1/knowledge_bases/{mine}/documents/{document}", None),
        ("POST", f"/v1/knowledge_bases/{base}/search", {"query": "shoes"}),
        ("POST", f"/v1/knowledge_bases/{base}/documents", {"text": "mine now"}),
    ]
    for method, path, body in requests:
        response = await client.request(method, path, json=body, headers=stranger.headers)
        assert response.status_code == 404, (method, path, response.text)
        assert response.json()["success"] is False
    assert await _search(client, stranger, mine, "shoes") == []
    assert await _search(client, owner, base, "shoes")  # nothing of the owner's was touched


@pytest.mark.parametrize(
    "query",
    [
        '"unterminated',
        "shoes NEAR returns",
        "NEAR(shoes refund, 2)",
        "shoe*",
        "-shoes",
        "shoes AND OR NOT",
        "(shoes",
        "shoes)",
        "body: shoes",
        "scope : k1",
        "{scope body}: x",
        "^shoes",
        "shoes & | ! <-> :*",
        "'; DROP TABLE knowledge_chunks; --",
        "\u00e9t\u00e9 caf\u00e9 \u4e2d\u6587",
        "___",
        "!!!",
        "a" * 1000,
    ],
)
async def test_queries_with_operators_are_words_never_errors(app, client, query):
    org = await make_org(app)
    base = await _corpus(client, org)
    results = await _search(client, org, base, query)
    assert isinstance(results, list)
    if "shoes" in query.lower():
        assert results and "Shoes" in results[0]["title"]


async def test_search_input_is_validated_in_the_agents_shape(app, client):
    org = await make_org(app)
    base = await _base(client, org)
    for body in (
        {"query": ""},
        {"query": "x", "top_k": 21},
        {"query": "x", "top_k": 0},
        {"top_k": 3},
        {"query": "x", "extra": 1},
        {"query": "x" * 1001},
    ):
        response = await client.post(
            f"/v1/knowledge_bases/{base}/search", json=body, headers=org.headers
        )
        assert response.status_code == 422, body
        assert response.json().items() >= BAD.items()
    bad = await client.post(
        "/v1/knowledge_bases/not-a-uuid/search", json={"query": "x"}, headers=org.headers
    )
    assert bad.status_code == 422 and bad.json()["success"] is False
    for body in ({"name": ""}, {"name": "x", "language": "not a tag"}, {}):
        response = await client.post("/v1/knowledge_bases", json=body, headers=org.headers)
        assert response.status_code == 422, body


@pytest.mark.parametrize(
    ("body", "content_type", "mentions"),
    [
        (b"hello", "application/msword", "Content-Type must be"),
        (b"hello", "image/png", "Content-Type must be"),
        (b"", "text/plain", "body"),
        (b"   \n ", "text/markdown", "body"),
        (b"\xff\xfe\xfa", "text/plain", "not valid UTF-8"),
        (b"hello", "text/plain; charset=nonsense", "unknown charset"),
        (b'{"text": ""}', "application/json", "text"),
        (b'{"title": "x"}', "application/json", "text"),
        (b'{"text": "x", "extra": 1}', "application/json", "extra"),
        (b"[1, 2]", "application/json", "body"),
        (b"{not json", "application/json", "JSON"),
        (b"not a pdf at all", "application/pdf", "could not be read"),
    ],
)
async def test_bad_documents_are_a_clear_422(app, client, body, content_type, mentions):
    org = await make_org(app)
    base = await _base(client, org)
    response = await client.post(
        f"/v1/knowledge_bases/{base}/documents",
        content=body,
        headers={**org.headers, "content-type": content_type},
    )
    assert response.status_code == 422, response.text
    assert response.json().items() >= BAD.items()
    assert mentions.lower() in response.json()["error"].lower(), response.json()


async def test_a_pdf_with_text_is_indexed(app, client):
    org = await make_org(app)
    base = await _base(client, org)
    body = corpus.pdf("The boiler is serviced every autumn.\nCall the caretaker for a key.")
    document = await _upload(client, org, base, body, "application/pdf", title="House rules")
    assert document["chunk_count"] == 1 and document["content_type"] == "application/pdf"
    [hit] = await _search(client, org, base, "boiler service", top_k=1)
    assert hit["title"] == "House rules" and "caretaker" in hit["text"]


@pytest.mark.parametrize(
    ("make", "mentions"),
    [
        (lambda: corpus.pdf(), "no text"),
        (lambda: corpus.pdf("Hidden words", encrypt=True), "encrypted"),
        (lambda: corpus.pdf(bomb=True), "could not be read"),
    ],
    ids=["scan", "encrypted", "zip-bomb"],
)
async def test_pdfs_without_usable_text_are_a_422_saying_why(app, client, make, mentions):
    org = await make_org(app)
    base = await _base(client, org)
    response = await client.post(
        f"/v1/knowledge_bases/{base}/documents",
        content=make(),
        headers={**org.headers, "content-type": "application/pdf"},
    )
    assert response.status_code == 422, response.text
    assert mentions in response.json()["error"]
    assert (await client.get(f"/v1/knowledge_bases/{base}/documents", headers=org.headers)).json()[
        "total_count"
    ] == 0
