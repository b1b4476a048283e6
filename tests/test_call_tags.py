"""GET /v1/call_tags (SPEC) and POST /v1/call_tags (docs/api-contract.md#extension-routes)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import load, make_org
from tests.paging import OUT_OF_RANGE_PAGING

CALL_TAG_FIELDS = {
    "id",
    "uuid",
    "name",
    "description",
    "color",
    "always_enabled",
    "created_at",
    "updated_at",
}


def _tags(count: int) -> list[dict]:
    base = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        {"name": f"tag-{i:02d}", "created_at": (base + timedelta(minutes=i)).isoformat()}
        for i in range(count)
    ]


async def test_default_page_is_first_20_in_creation_order(app, client):
    org = await make_org(app)
    await load(app, org, {"call_tags": list(reversed(_tags(25)))})
    response = await client.get("/v1/call_tags", headers=org.headers)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"call_tags", "total_count", "page", "page_size", "total_pages"}
    assert (body["total_count"], body["page"], body["page_size"], body["total_pages"]) == (
        25,
        1,
        20,
        2,
    )
    assert [t["name"] for t in body["call_tags"]] == [f"tag-{i:02d}" for i in range(20)]
    assert set(body["call_tags"][0]) == CALL_TAG_FIELDS
    assert body["call_tags"][0]["id"] == body["call_tags"][0]["uuid"]


async def test_pages_cover_every_tag_once(app, client):
    org = await make_org(app)
    await load(app, org, {"call_tags": _tags(7)})
    seen = []
    for page in (1, 2, 3):
        r = await client.get(f"/v1/call_tags?page={page}&page_size=3", headers=org.headers)
        assert r.json()["total_pages"] == 3
        seen += [t["name"] for t in r.json()["call_tags"]]
    assert seen == [f"tag-{i:02d}" for i in range(7)]


async def test_ties_in_created_at_are_broken_by_id(app, client):
    org = await make_org(app)
    same = "2026-01-01T00:00:00+00:00"
    ids = [
        "00000000-0000-4000-8000-000000000003",
        "00000000-0000-4000-8000-000000000001",
        "00000000-0000-4000-8000-000000000002",
    ]
    await load(app, org, {"call_tags": [{"id": i, "name": i, "created_at": same} for i in ids]})
    body = (await client.get("/v1/call_tags", headers=org.headers)).json()
    assert [t["id"] for t in body["call_tags"]] == sorted(ids)


async def test_page_past_the_end_is_empty_200(app, client):
    org = await make_org(app)
    await load(app, org, {"call_tags": _tags(2)})
    r = await client.get("/v1/call_tags?page=5", headers=org.headers)
    assert r.status_code == 200
    assert r.json()["call_tags"] == [] and r.json()["total_count"] == 2


async def test_empty_organization(app, client):
    org = await make_org(app)
    body = (await client.get("/v1/call_tags", headers=org.headers)).json()
    assert body == {"call_tags": [], "total_count": 0, "page": 1, "page_size": 20, "total_pages": 0}


@pytest.mark.parametrize("query", OUT_OF_RANGE_PAGING)
async def test_out_of_range_paging_is_422_detail(app, client, query):
    org = await make_org(app)
    response = await client.get(f"/v1/call_tags?{query}", headers=org.headers)
    assert response.status_code == 422
    [item] = response.json()["detail"]
    assert set(item) == {"loc", "msg", "type"}
    assert item["loc"][0] == "query"


async def test_page_size_100_is_allowed(app, client):
    org = await make_org(app)
    r = await client.get("/v1/call_tags?page_size=100", headers=org.headers)
    assert r.status_code == 200 and r.json()["page_size"] == 100


async def test_tags_of_other_organizations_are_invisible(app, client):
    mine = await make_org(app, "mine")
    theirs = await make_org(app, "theirs")
    await load(app, theirs, {"call_tags": _tags(3)})
    body = (await client.get("/v1/call_tags", headers=mine.headers)).json()
    assert body["total_count"] == 0


async def test_create_call_tag(app, client):
    org = await make_org(app)
    response = await client.post(
        "/v1/call_tags",
        headers=org.headers,
        json={
            "name": "  Urgent ☎ ",
            "description": "Needs a call back",
            "color": "#ff0000",
            "always_enabled": True,
        },
    )
    assert response.status_code == 201
    tag = response.json()
    assert set(tag) == CALL_TAG_FIELDS
    assert tag["name"] == "Urgent ☎" and tag["always_enabled"] is True
    listed = (await client.get("/v1/call_tags", headers=org.headers)).json()["call_tags"]
    assert [t["id"] for t in listed] == [tag["id"]]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": "   "},
        {"name": 5},
        {"name": "x" * 256},
        {"name": "ok", "always_enabled": "yes"},
        {"name": "ok", "color": "c" * 33},
        [],
        "name",
    ],
    ids=[
        "missing",
        "empty",
        "blank",
        "number",
        "too-long",
        "bool-as-string",
        "long-color",
        "array",
        "string",
    ],
)
async def test_create_call_tag_validation_is_422_detail(app, client, body):
    org = await make_org(app)
    response = await client.post("/v1/call_tags", headers=org.headers, json=body)
    assert response.status_code == 422
    assert all(set(i) == {"loc", "msg", "type"} for i in response.json()["detail"])
    listed = (await client.get("/v1/call_tags", headers=org.headers)).json()
    assert listed["total_count"] == 0
