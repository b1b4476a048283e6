"""GET /v1/data/{table} and POST /v1/data/{table}/query: paging, sorting, filters
(docs/api-contract.md)."""

from __future__ import annotations

import pytest

from tests.factories import make_org
from tests.test_custom_data_support import assert_status_error, create_table, insert

ROWS = [
    {
        "name": "Ada",
        "email": "ada@x",
        "score": 30,
        "balance": 1.5,
        "active": True,
        "synced_at": "2024-01-01T10:00:00Z",
        "profile": {"a": 1},
    },
    {
        "name": "Alan",
        "email": "alan@x",
        "score": 10,
        "balance": 2.0,
        "active": False,
        "synced_at": "2024-01-02T10:00:00Z",
    },
    {"name": "Grace", "email": "grace@x", "score": 30, "active": True},
    {
        "name": "Linus",
        "score": 20,
        "balance": -1.0,
        "active": True,
        "synced_at": "2024-01-03T10:00:00+05:00",
    },
    {"name": "100% real_name", "score": None, "active": None},
]


async def _setup(app, client, rows=ROWS):
    org = await make_org(app)
    await create_table(client, org)
    created = await insert(client, org, "customers", rows)
    return org, created


async def _list(client, org, query="", status=200):
    response = await client.get(f"/v1/data/customers{query}", headers=org.headers)
    assert response.status_code == status, response.text
    return response.json()


async def test_default_list_is_newest_id_first_page_1_of_50(app, client):
    org, created = await _setup(app, client)
    body = await _list(client, org)
    assert set(body) == {"records", "total_count", "page", "per_page"}
    assert body["page"] == 1 and body["per_page"] == 50 and body["total_count"] == 5
    assert [r["id"] for r in body["records"]] == sorted((r["id"] for r in created), reverse=True)
    assert body["records"][-1] == created[0]


PAGING = [
    ("?page=2&per_page=2", 2, 2),
    ("?page=0", 1, 50),
    ("?page=-3", 1, 50),
    ("?page=abc", 1, 50),
    ("?page=", 1, 50),
    ("?page=1.5", 1, 50),
    ("?page=99999999999999999999999999", 2**31 - 1, 50),
    ("?per_page=0", 1, 50),
    ("?per_page=-1", 1, 50),
    ("?per_page=x", 1, 50),
    ("?per_page=201", 1, 200),
    ("?per_page=200", 1, 200),
    ("?per_page=99999999999999999999", 1, 200),
    ("?per_page=1", 1, 1),
]


async def test_page_and_per_page_coercion(app, client):
    org, _ = await _setup(app, client)
    for query, page, per_page in PAGING:
        body = await _list(client, org, query)
        assert (body["page"], body["per_page"]) == (page, per_page), query
        assert body["total_count"] == 5
        expected = max(0, min(per_page, 5 - (page - 1) * per_page))
        assert len(body["records"]) == expected, query


async def test_per_page_cap_with_many_rows(app, client):
    org = await make_org(app)
    await create_table(client, org)
    await insert(client, org, "customers", [{"name": str(i)} for i in range(250)])
    body = await _list(client, org, "?per_page=1000")
    assert body["per_page"] == 200 and len(body["records"]) == 200 and body["total_count"] == 250
    last = await _list(client, org, "?per_page=1000&page=2")
    assert len(last["records"]) == 50


@pytest.mark.parametrize(
    ("direction", "ascending"),
    [
        ("ASC", True),
        ("asc", True),
        ("DESC", False),
        ("desc", False),
        ("Asc", False),
        ("up", False),
        ("", False),
        (None, False),
    ],
)
async def test_sort_direction_rule(app, client, direction, ascending):
    org, _ = await _setup(app, client)
    query = "?sort_by=balance" + ("" if direction is None else f"&sort_direction={direction}")
    balances = [r["balance"] for r in (await _list(client, org, query))["records"]]
    non_null = [b for b in balances if b is not None]
    assert non_null == sorted(non_null, reverse=not ascending)
    # NULLs sort first ascending and last descending, on both backends.
    if ascending:
        assert balances[:2] == [None, None]
    else:
        assert balances[-2:] == [None, None]


async def test_ties_are_broken_by_id_in_the_same_direction(app, client):
    org, created = await _setup(app, client)
    ada, grace = created[0]["id"], created[2]["id"]
    desc = [r["id"] for r in (await _list(client, org, "?sort_by=score"))["records"]]
    assert desc[:2] == [grace, ada]
    asc = [
        r["id"] for r in (await _list(client, org, "?sort_by=score&sort_direction=asc"))["records"]
    ]
    assert asc[-2:] == [ada, grace]


async def test_pages_never_overlap_or_skip(app, client):
    org = await make_org(app)
    await create_table(client, org)
    created = await insert(
        client, org, "customers", [{"name": str(i), "score": i % 3} for i in range(23)]
    )
    for direction in ("asc", "desc"):
        seen = []
        for page in range(1, 6):
            body = await _list(
                client, org, f"?sort_by=score&sort_direction={direction}&per_page=5&page={page}"
            )
            seen += [r["id"] for r in body["records"]]
        assert sorted(seen) == sorted(r["id"] for r in created)
        assert len(seen) == 23


@pytest.mark.parametrize("sort_by", ["nope", "ID", "id;drop table x", "profile", "page"])
async def test_unknown_or_unsortable_sort_by_is_422(app, client, sort_by):
    org, _ = await _setup(app, client)
    response = await client.get(
        "/v1/data/customers", params={"sort_by": sort_by}, headers=org.headers
    )
    assert "sort_by" in assert_status_error(response, 422)


@pytest.mark.parametrize(
    "sort_by", ["id", "organization_id", "created_at", "updated_at", "name", "synced_at"]
)
async def test_sort_by_managed_and_declared_columns(app, client, sort_by):
    org, _ = await _setup(app, client)
    body = await _list(client, org, f"?sort_by={sort_by}&sort_direction=asc")
    assert body["total_count"] == 5


FILTERS = [
    ("?active=true", {"Ada", "Grace", "Linus"}),
    ("?active=1", {"Ada", "Grace", "Linus"}),
    ("?active=false", {"Alan"}),
    ("?active=0", {"Alan"}),
    ("?score=30", {"Ada", "Grace"}),
    ("?score=30&active=true", {"Ada", "Grace"}),
    ("?score=10&score=20", {"Alan", "Linus"}),
    ("?score=10&score=20&score=10", {"Alan", "Linus"}),
    ("?balance=1.5", {"Ada"}),
    ("?balance=2", {"Alan"}),
    ("?name=Ada", {"Ada"}),
    ("?name=ada", set()),
    ("?name=100%25%20real_name", {"100% real_name"}),
    ("?name=%25", set()),
    ("?name=", set()),
    ("?email=ada@x&email=grace@x", {"Ada", "Grace"}),
    ("?synced_at=2024-01-03T05:00:00Z", {"Linus"}),
    ("?synced_at=2024-01-03T10:00:00%2B05:00", {"Linus"}),
    ("?synced_at=2024-01-03T10:00:00+05:00", {"Linus"}),
    ("?synced_at=2024-01-01T10:00:00", {"Ada"}),
    ("?nonsense=1&page_size=3&_sort=x", {"Ada", "Alan", "Grace", "Linus", "100% real_name"}),
]


async def test_exact_match_filters(app, client):
    org, _ = await _setup(app, client)
    for query, names in FILTERS:
        body = await _list(client, org, query)
        assert {r["name"] for r in body["records"]} == names, query
        assert body["total_count"] == len(names), query


async def test_filters_on_managed_columns(app, client):
    org, created = await _setup(app, client)
    first = created[0]
    body = await _list(client, org, f"?id={first['id']}&id={created[1]['id']}")
    assert {r["id"] for r in body["records"]} == {first["id"], created[1]["id"]}
    assert (await _list(client, org, f"?organization_id={org.id}"))["total_count"] == 5
    assert (await _list(client, org, f"?organization_id={org.id + 1}"))["total_count"] == 0
    created_at = first["created_at"].replace("+", "%2B")
    assert (await _list(client, org, f"?created_at={created_at}"))["total_count"] == 5


@pytest.mark.parametrize(
    "query",
    [
        "?score=abc",
        "?score=1.5",
        "?score=99999999999999999999",
        "?active=yes",
        "?balance=nan",
        "?balance=inf",
        "?synced_at=yesterday",
        "?profile=%7B%7D",
        "?id=x",
        "?created_at=nope",
        "?name=a%00b",
    ],
)
async def test_filters_that_do_not_convert_are_422(app, client, query):
    org, _ = await _setup(app, client)
    response = await client.get(f"/v1/data/customers{query}", headers=org.headers)
    assert_status_error(response, 422)


async def test_total_count_counts_all_matches_past_the_page(app, client):
    org, _ = await _setup(app, client)
    body = await _list(client, org, "?active=true&per_page=1&page=2&sort_by=score")
    assert body["total_count"] == 3 and len(body["records"]) == 1
    past = await _list(client, org, "?active=true&page=9")
    assert past["total_count"] == 3 and past["records"] == []


# POST /v1/data/{table}/query


async def _query(client, org, body, status=200):
    response = await client.post("/v1/data/customers/query", json=body, headers=org.headers)
    assert response.status_code == status, response.text
    return response.json()


def _names(body):
    return {r["name"] for r in body["records"]}


OPERATORS = [
    ([], {"Ada", "Alan", "Grace", "Linus", "100% real_name"}),
    ([{"column": "score", "op": "eq", "value": 30}], {"Ada", "Grace"}),
    ([{"column": "score", "op": "ne", "value": 30}], {"Alan", "Linus", "100% real_name"}),
    ([{"column": "score", "op": "lt", "value": 20}], {"Alan"}),
    ([{"column": "score", "op": "lte", "value": 20}], {"Alan", "Linus"}),
    ([{"column": "score", "op": "gt", "value": 20}], {"Ada", "Grace"}),
    ([{"column": "score", "op": "gte", "value": 20}], {"Ada", "Grace", "Linus"}),
    ([{"column": "score", "op": "in", "value": [10, 20, 99]}], {"Alan", "Linus"}),
    ([{"column": "score", "op": "is_null", "value": True}], {"100% real_name"}),
    ([{"column": "balance", "op": "is_null", "value": False}], {"Ada", "Alan", "Linus"}),
    ([{"column": "profile", "op": "is_null", "value": False}], {"Ada"}),
    (
        [{"column": "name", "op": "contains", "value": "a"}],
        {"Ada", "Alan", "Grace", "100% real_name"},
    ),
    ([{"column": "name", "op": "contains", "value": "A"}], {"Ada", "Alan"}),
    ([{"column": "name", "op": "contains", "value": "%"}], {"100% real_name"}),
    ([{"column": "name", "op": "contains", "value": "_"}], {"100% real_name"}),
    ([{"column": "name", "op": "gte", "value": "G"}], {"Grace", "Linus"}),
    ([{"column": "active", "op": "eq", "value": False}], {"Alan"}),
    ([{"column": "active", "op": "ne", "value": True}], {"Alan", "100% real_name"}),
    ([{"column": "synced_at", "op": "gt", "value": "2024-01-02T00:00:00Z"}], {"Alan", "Linus"}),
    # 2024-01-03T10:00:00+05:00 is 05:00Z: chronological, not textual.
    (
        [{"column": "synced_at", "op": "lt", "value": "2024-01-03T06:00:00Z"}],
        {"Ada", "Alan", "Linus"},
    ),
    ([{"column": "balance", "op": "gt", "value": 0}], {"Ada", "Alan"}),
    (
        [
            {"column": "active", "op": "eq", "value": True},
            {"column": "score", "op": "lt", "value": 30},
        ],
        {"Linus"},
    ),
]


async def test_query_operators(app, client):
    org, _ = await _setup(app, client)
    for filters, names in OPERATORS:
        body = await _query(client, org, {"filters": filters})
        assert _names(body) == names, filters
        assert body["total_count"] == len(names), filters


async def test_query_filter_on_managed_columns_and_paging(app, client):
    org, created = await _setup(app, client)
    body = await _query(
        client,
        org,
        {
            "filters": [{"column": "id", "op": "gte", "value": created[1]["id"]}],
            "sort_by": "score",
            "sort_direction": "asc",
            "page": 1,
            "per_page": 2,
        },
    )
    assert body["total_count"] == 4 and body["per_page"] == 2
    assert [r["name"] for r in body["records"]] == ["100% real_name", "Alan"]
    coerced = await _query(client, org, {"page": "x", "per_page": 500})
    assert (coerced["page"], coerced["per_page"]) == (1, 200)


BAD_QUERIES = [
    {"filters": "score=1"},
    {"filters": [5]},
    {"filters": [{"column": "nope", "op": "eq", "value": 1}]},
    {"filters": [{"column": "score", "op": "like", "value": 1}]},
    {"filters": [{"column": "score", "op": "eq", "value": "1"}]},
    {"filters": [{"column": "score", "op": "eq", "value": None}]},
    {"filters": [{"column": "score", "op": "contains", "value": 1}]},
    {"filters": [{"column": "score", "op": "in", "value": []}]},
    {"filters": [{"column": "score", "op": "in", "value": 1}]},
    {"filters": [{"column": "score", "op": "in", "value": [1, "2"]}]},
    {"filters": [{"column": "active", "op": "lt", "value": True}]},
    {"filters": [{"column": "active", "op": "eq", "value": 1}]},
    {"filters": [{"column": "profile", "op": "eq", "value": {"a": 1}}]},
    {"filters": [{"column": "score", "op": "is_null", "value": "yes"}]},
    {"filters": [{"column": "synced_at", "op": "gt", "value": "soon"}]},
    {"filters": [{"column": "score", "op": "eq", "value": 1}] * 51},
    {"sort_by": "nope"},
    {"sort_by": 5},
    [],
    "filters",
]


async def test_invalid_queries_are_422(app, client):
    org, _ = await _setup(app, client)
    for body in BAD_QUERIES:
        response = await client.post("/v1/data/customers/query", json=body, headers=org.headers)
        assert_status_error(response, 422)


async def test_the_count_follows_every_write_between_lists(app, client):
    """Repeated lists (served on the lean path once warm, where SQLite may answer a count it
    made before) count anew after each kind of write, whichever connection made it."""
    org, created = await _setup(app, client)
    for _ in range(3):
        assert (await _list(client, org, "?active=true"))["total_count"] == 3
    patched = await client.patch(
        f"/v1/data/customers/{created[0]['id']}", json={"active": False}, headers=org.headers
    )
    assert patched.status_code == 200, patched.text
    assert (await _list(client, org, "?active=true"))["total_count"] == 2
    await insert(client, org, "customers", [{"name": "Edsger", "active": True}])
    assert (await _list(client, org, "?active=true"))["total_count"] == 3
    deleted = await client.delete(f"/v1/data/customers/{created[2]['id']}", headers=org.headers)
    assert deleted.status_code == 200, deleted.text
    assert (await _list(client, org, "?active=true"))["total_count"] == 2
