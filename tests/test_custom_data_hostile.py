"""Hostile input on /v1/data: injection attempts in every name and value, odd bodies, auth.

Each attempt is rejected (422/404 in the STATUS shape) or harmless (matches nothing), never a
500, and the data and the schema are intact afterwards.
"""

from __future__ import annotations

from urllib.parse import quote

from callplane.kit.jsonvalues import MAX_DEPTH
from tests.factories import make_org
from tests.test_custom_data_support import assert_status_error, create_table, insert

INJECTIONS = [
    "customers; DROP TABLE customers",
    "customers' OR '1'='1",
    'customers" --',
    "../customers",
    "customers%00",
    "naïve",
    "x" * 64,
    "custom ers",
    "customers\n",
]


async def _setup(app, client):
    org = await make_org(app)
    await create_table(client, org)
    records = await insert(
        client, org, "customers", [{"name": "Ada", "score": 1}, {"name": "Alan", "score": 2}]
    )
    return org, records


async def _intact(client, org, records):
    body = (await client.get("/v1/data/customers?sort_direction=asc", headers=org.headers)).json()
    assert body["records"] == records
    assert len((await client.get("/v1/data/tables", headers=org.headers)).json()["tables"]) == 1


async def test_hostile_table_names_in_paths(app, client):
    org, records = await _setup(app, client)
    # A physical table name is just a name that no table of the organization has; a name with
    # "/" is routed elsewhere by the path itself.
    for name in [*(n for n in INJECTIONS if "/" not in n), "udt_1", "Customers"]:
        path = quote(name, safe="")
        for method, suffix, body in (
            ("GET", "", None),
            ("DELETE", "", None),
            ("POST", "", {"records": [{"name": "x"}]}),
            ("POST", "/query", {}),
            ("GET", "/1", None),
            ("PATCH", "/1", {"score": 5}),
            ("PUT", "/1", {"name": "x"}),
            ("DELETE", "/1", None),
        ):
            response = await client.request(
                method, f"/v1/data/{path}{suffix}", json=body, headers=org.headers
            )
            assert response.status_code in (404, 422), (name, method, response.status_code)
            assert_status_error(response, response.status_code)
    await _intact(client, org, records)


async def test_hostile_table_and_column_names_at_creation(app, client):
    org, records = await _setup(app, client)
    for name in INJECTIONS:
        table = await client.post(
            "/v1/data/tables",
            json={"name": name, "columns": [{"name": "a", "type": "TEXT"}]},
            headers=org.headers,
        )
        assert_status_error(table, 422)
        column = await client.post(
            "/v1/data/tables",
            json={"name": "t", "columns": [{"name": name, "type": "TEXT"}]},
            headers=org.headers,
        )
        assert_status_error(column, 422)
        typed = await client.post(
            "/v1/data/tables",
            json={"name": "t", "columns": [{"name": "a", "type": name}]},
            headers=org.headers,
        )
        assert_status_error(typed, 422)
        ref = await client.post(
            "/v1/data/tables",
            json={"name": "t", "columns": [{"name": "a", "type": "INTEGER", "references": name}]},
            headers=org.headers,
        )
        assert_status_error(ref, 422)
    await _intact(client, org, records)


async def test_hostile_sort_filter_names_and_values(app, client):
    org, records = await _setup(app, client)
    for text in INJECTIONS + ["name; --", "score DESC", "1=1"]:
        sort = await client.get("/v1/data/customers", params={"sort_by": text}, headers=org.headers)
        assert_status_error(sort, 422)
        # A parameter that names no column is ignored.
        ignored = await client.get("/v1/data/customers", params={text: "1"}, headers=org.headers)
        assert ignored.status_code == 200 and ignored.json()["total_count"] == 2
        # Values are bound: a hostile TEXT value simply matches nothing.
        harmless = await client.get(
            "/v1/data/customers", params={"name": text}, headers=org.headers
        )
        assert harmless.status_code == 200 and harmless.json()["total_count"] == 0
        not_int = await client.get(
            "/v1/data/customers", params={"score": text}, headers=org.headers
        )
        assert_status_error(not_int, 422)
        query = await client.post(
            "/v1/data/customers/query",
            json={"filters": [{"column": text, "op": "eq", "value": 1}]},
            headers=org.headers,
        )
        assert_status_error(query, 422)
        op = await client.post(
            "/v1/data/customers/query",
            json={"filters": [{"column": "name", "op": text, "value": "Ada"}]},
            headers=org.headers,
        )
        assert_status_error(op, 422)
        contains = await client.post(
            "/v1/data/customers/query",
            json={"filters": [{"column": "name", "op": "contains", "value": text}]},
            headers=org.headers,
        )
        assert contains.status_code == 200 and contains.json()["total_count"] == 0
        patch = await client.patch(
            f"/v1/data/customers/{records[0]['id']}",
            params={"sourceUpdatedAtColumn": text},
            json={"score": 1},
            headers=org.headers,
        )
        assert_status_error(patch, 422)
    # Hostile keys in write bodies are ignored like any unknown column.
    await client.patch(
        f"/v1/data/customers/{records[0]['id']}",
        json={'name" = 1; --': "x", "score) --": 3},
        headers=org.headers,
    )
    await _intact(client, org, records)


async def test_odd_bodies_are_422_never_500(app, client):
    org, records = await _setup(app, client)
    record_path = f"/v1/data/customers/{records[0]['id']}"
    json_headers = {**org.headers, "Content-Type": "application/json"}
    for method, path in (
        ("POST", "/v1/data/tables"),
        ("POST", "/v1/data/customers"),
        ("POST", "/v1/data/customers/query"),
        ("PUT", record_path),
        ("PATCH", record_path),
    ):
        for raw in (b"{", b"not json", b"\xff\xfe", b'{"records": [' * 50 + b"]" * 50):
            response = await client.request(method, path, content=raw, headers=json_headers)
            assert_status_error(response, 422)
        form = await client.request(
            method, path, content=b"a=1", headers={**org.headers, "Content-Type": "text/plain"}
        )
        assert_status_error(form, 422)
    # One nesting limit for every JSON body (callplane.kit.jsonvalues.MAX_DEPTH): the body, the
    # records list and the record take three levels.
    deep: object = "leaf"
    for _ in range(MAX_DEPTH - 3):
        deep = {"a": deep}
    await create_table(client, org, {"name": "docs", "columns": [{"name": "doc", "type": "JSON"}]})
    nested = await client.post(
        "/v1/data/docs", json={"records": [{"doc": deep}]}, headers=org.headers
    )
    assert nested.status_code == 201
    assert (await client.get("/v1/data/docs", headers=org.headers)).json()["total_count"] == 1
    deeper = await client.post(
        "/v1/data/docs", json={"records": [{"doc": {"a": deep}}]}, headers=org.headers
    )
    assert_status_error(deeper, 422)
    assert deeper.json()["error"] == f"records: is nested more than {MAX_DEPTH} levels deep"


async def test_auth_errors_use_the_status_shape(app, client):
    for method, path in (
        ("GET", "/v1/data/tables"),
        ("POST", "/v1/data/tables"),
        ("GET", "/v1/data/customers"),
        ("PATCH", "/v1/data/customers/1"),
        ("DELETE", "/v1/data/tables/1"),
    ):
        for headers in ({}, {"Authorization": "Bearer cp_wrong"}, {"Authorization": "Basic x"}):
            response = await client.request(method, path, headers=headers)
            assert_status_error(response, 401)
            assert response.headers["WWW-Authenticate"] == "Bearer"


async def test_openapi_documents_the_data_routes(app, client):
    schema = (await client.get("/v1/openapi.json")).json()
    paths = schema["paths"]
    for path in (
        "/v1/data/tables",
        "/v1/data/tables/{id}",
        "/v1/data/{table_name}",
        "/v1/data/{table_name}/query",
        "/v1/data/{table_name}/{id}",
    ):
        assert path in paths
    assert set(paths["/v1/data/{table_name}/{id}"]) == {"get", "put", "patch", "delete"}
    assert "201" in paths["/v1/data/tables"]["post"]["responses"]
    conflict = paths["/v1/data/tables/{id}"]["delete"]["responses"]["409"]
    assert conflict["content"]["application/json"]["schema"]["$ref"].endswith("/StatusError")


async def test_sql_keywords_as_column_and_table_names(app, client):
    org = await make_org(app)
    columns = [
        {"name": n, "type": "INTEGER", "indexed": True} for n in ("select", "order", "group")
    ]
    columns.append({"name": "from", "type": "TEXT", "unique": True})
    await create_table(
        client, org, {"name": "table", "columns": columns, "indexes": [["order", "group"]]}
    )
    await insert(
        client,
        org,
        "table",
        [
            {"select": 1, "order": 2, "group": 3, "from": "a"},
            {"select": 2, "order": 1, "from": "b"},
        ],
    )
    body = (
        await client.get(
            "/v1/data/table?sort_by=order&sort_direction=asc&select=1&select=2", headers=org.headers
        )
    ).json()
    assert [r["from"] for r in body["records"]] == ["b", "a"] and body["total_count"] == 2
    queried = await client.post(
        "/v1/data/table/query",
        json={"filters": [{"column": "group", "op": "is_null", "value": True}]},
        headers=org.headers,
    )
    assert [r["from"] for r in queried.json()["records"]] == ["b"]
