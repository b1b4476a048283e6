"""Records: POST (batch), GET, PUT, PATCH, DELETE one and all (SPEC; docs/api-contract.md)."""

from __future__ import annotations

import re

import pytest

from tests.factories import make_org
from tests.test_custom_data_support import assert_status_error, create_table, insert

MANAGED = {"id", "organization_id", "created_at", "updated_at"}
DECLARED = {"name", "email", "score", "balance", "active", "synced_at", "profile"}


async def _setup(app, client):
    org = await make_org(app)
    await create_table(client, org)
    return org


async def test_create_records_batch(app, client):
    org = await _setup(app, client)
    response = await client.post(
        "/v1/data/customers",
        json={
            "records": [
                {
                    "name": "Ada",
                    "email": "ada@example.com",
                    "score": 7,
                    "balance": 1.5,
                    "active": True,
                    "synced_at": "2024-03-01T10:00:00+02:00",
                    "profile": {"tags": ["vip"], "n": 1},
                },
                {"name": "Alan"},
            ]
        },
        headers=org.headers,
    )
    assert response.status_code == 201
    ada, alan = response.json()["records"]
    assert set(ada) == MANAGED | DECLARED
    assert ada["organization_id"] == org.id
    assert ada["synced_at"] == "2024-03-01T08:00:00Z"
    assert ada["profile"] == {"tags": ["vip"], "n": 1}
    assert ada["active"] is True and ada["balance"] == 1.5 and ada["score"] == 7
    assert ada["created_at"].endswith("Z") and ada["created_at"] == ada["updated_at"]
    assert alan["id"] > ada["id"]
    assert {k: alan[k] for k in DECLARED - {"name"}} == dict.fromkeys(DECLARED - {"name"})
    got = await client.get(f"/v1/data/customers/{ada['id']}", headers=org.headers)
    assert got.status_code == 200 and got.json() == {"record": ada}


async def test_managed_and_unknown_columns_in_bodies_are_ignored(app, client):
    org = await _setup(app, client)
    [record] = await insert(
        client,
        org,
        "customers",
        [
            {
                "name": "Ada",
                "id": 999,
                "organization_id": 12345,
                "created_at": "2000-01-01T00:00:00Z",
                "updated_at": "2000-01-01T00:00:00Z",
                "nonsense": "x",
            }
        ],
    )
    assert record["id"] != 999 and record["organization_id"] == org.id
    assert not record["created_at"].startswith("2000") and "nonsense" not in record
    patched = await client.patch(
        f"/v1/data/customers/{record['id']}",
        json={"id": 5, "organization_id": 1, "created_at": "2000-01-01T00:00:00Z", "zzz": 1},
        headers=org.headers,
    )
    # Nothing left after ignoring: unchanged, updated_at included.
    assert patched.status_code == 200 and patched.json() == {"record": record}
    empty = await client.patch(f"/v1/data/customers/{record['id']}", json={}, headers=org.headers)
    assert empty.json() == {"record": record}


async def test_batch_is_all_or_nothing(app, client):
    org = await _setup(app, client)
    bad = await client.post(
        "/v1/data/customers",
        json={"records": [{"name": "Ada"}, {"name": "Alan", "score": "high"}]},
        headers=org.headers,
    )
    message = assert_status_error(bad, 422)
    assert "records[1]" in message and "score" in message
    duplicate = await client.post(
        "/v1/data/customers",
        json={"records": [{"name": "A", "email": "x@y"}, {"name": "B", "email": "x@y"}]},
        headers=org.headers,
    )
    assert_status_error(duplicate, 409)
    listed = await client.get("/v1/data/customers", headers=org.headers)
    assert listed.json()["total_count"] == 0


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"records": []}, id="empty"),
        pytest.param({"records": [{"name": "a"}] * 1001}, id="1001"),
        pytest.param({"records": ["a"]}, id="not-object"),
        pytest.param({"records": {"name": "a"}}, id="records-object"),
        pytest.param({}, id="missing"),
        pytest.param([{"name": "a"}], id="bare-list"),
    ],
)
async def test_malformed_batches_are_422(app, client, body):
    org = await _setup(app, client)
    response = await client.post("/v1/data/customers", json=body, headers=org.headers)
    assert_status_error(response, 422)


async def test_batch_of_1000(app, client):
    org = await _setup(app, client)
    created = await insert(
        client, org, "customers", [{"name": f"n{i}", "score": i} for i in range(1000)]
    )
    assert [r["score"] for r in created] == list(range(1000))
    assert len({r["id"] for r in created}) == 1000


async def test_required_columns(app, client):
    org = await _setup(app, client)
    for record in ({}, {"name": None}):
        response = await client.post(
            "/v1/data/customers", json={"records": [record]}, headers=org.headers
        )
        assert "name" in assert_status_error(response, 422)
    [ada] = await insert(client, org, "customers", [{"name": "Ada"}])
    response = await client.patch(
        f"/v1/data/customers/{ada['id']}", json={"name": None}, headers=org.headers
    )
    assert "name" in assert_status_error(response, 422)


# (type, value written, value returned) — None as returned means: 422 naming the column.
VALID = object()
MATRIX = [
    ("TEXT", "hello", "hello"),
    ("TEXT", "", ""),
    ("TEXT", "héllo ✓ 日本", "héllo ✓ 日本"),
    ("TEXT", 5, None),
    ("TEXT", True, None),
    ("TEXT", ["a"], None),
    ("TEXT", "nul\u0000byte", None),
    ("INTEGER", 5, 5),
    ("INTEGER", -(2**63), -(2**63)),
    ("INTEGER", 2**63 - 1, 2**63 - 1),
    ("INTEGER", 2**63, None),
    ("INTEGER", 1.5, None),
    ("INTEGER", 1.0, None),
    ("INTEGER", True, None),
    ("INTEGER", "5", None),
    ("FLOAT", 1.5, 1.5),
    ("FLOAT", 3, 3.0),
    ("FLOAT", -0.25, -0.25),
    ("FLOAT", True, None),
    ("FLOAT", "1.5", None),
    ("FLOAT", 10**300, None),  # an integer beyond 64 bits: refused by the JSON value policy
    ("BOOLEAN", True, True),
    ("BOOLEAN", False, False),
    ("BOOLEAN", 1, None),
    ("BOOLEAN", "true", None),
    ("TIMESTAMP", "2024-01-01T10:00:00Z", "2024-01-01T10:00:00Z"),
    ("TIMESTAMP", "2024-01-01T10:00:00", "2024-01-01T10:00:00Z"),
    ("TIMESTAMP", "2024-01-01T10:00:00-05:30", "2024-01-01T15:30:00Z"),
    ("TIMESTAMP", "2024-01-01T10:00:00.123456+00:00", "2024-01-01T10:00:00.123456Z"),
    ("TIMESTAMP", "2024-01-01", "2024-01-01T00:00:00Z"),
    ("TIMESTAMP", "yesterday", None),
    ("TIMESTAMP", "2024-13-01T00:00:00Z", None),
    ("TIMESTAMP", 1704067200, None),
    ("TIMESTAMP", "0001-01-01T00:00:00+01:00", None),
    ("JSON", {"a": [1, {"b": None}]}, {"a": [1, {"b": None}]}),
    ("JSON", [1, "two"], [1, "two"]),
    ("JSON", "text", "text"),
    ("JSON", 5, 5),
    ("JSON", False, False),
    ("JSON", {"k": "nul\u0000"}, None),
]


async def test_column_type_validation_matrix(app, client):
    org = await make_org(app)
    columns = [{"name": t.lower(), "type": t} for t in dict.fromkeys(t for t, _v, _e in MATRIX)]
    await create_table(client, org, {"name": "t", "columns": columns})
    [blank] = await insert(client, org, "t", [{}])
    path = f"/v1/data/t/{blank['id']}"
    for type_, value, expected in MATRIX:
        column, case = type_.lower(), f"{type_} {value!r}"
        response = await client.post(
            "/v1/data/t", json={"records": [{column: value}]}, headers=org.headers
        )
        if expected is None:
            # The same rule on POST, PUT and PATCH; the message names the column.
            assert re.search(rf"\b{column}[.:]", assert_status_error(response, 422)), case
            for method in ("PUT", "PATCH"):
                response = await client.request(
                    method, path, json={column: value}, headers=org.headers
                )
                assert re.search(rf"\b{column}[.:]", assert_status_error(response, 422)), case
            continue
        assert response.status_code == 201, case
        [record] = response.json()["records"]
        assert record[column] == expected and type(record[column]) is type(expected), case
        for method in ("PUT", "PATCH"):
            response = await client.request(method, path, json={column: value}, headers=org.headers)
            assert response.json()["record"][column] == expected, case
    # Nothing invalid was ever written.
    assert (await client.get(path, headers=org.headers)).status_code == 200


async def test_nan_and_infinity_are_rejected(app, client):
    org = await make_org(app)
    await create_table(
        client,
        org,
        {"name": "t", "columns": [{"name": "f", "type": "FLOAT"}, {"name": "j", "type": "JSON"}]},
    )
    for raw in (
        b'{"records": [{"f": NaN}]}',
        b'{"records": [{"f": Infinity}]}',
        b'{"records": [{"j": [-Infinity]}]}',
    ):
        response = await client.post(
            "/v1/data/t", content=raw, headers={**org.headers, "Content-Type": "application/json"}
        )
        assert_status_error(response, 422)


async def test_json_null_is_sql_null(app, client):
    org = await make_org(app)
    await create_table(
        client, org, {"name": "t", "columns": [{"name": "j", "type": "JSON", "required": True}]}
    )
    response = await client.post("/v1/data/t", json={"records": [{"j": None}]}, headers=org.headers)
    assert_status_error(response, 422)


async def test_put_replaces_every_declared_column(app, client):
    org = await _setup(app, client)
    [ada] = await insert(client, org, "customers", [{"name": "Ada", "score": 5, "active": True}])
    response = await client.put(
        f"/v1/data/customers/{ada['id']}",
        json={"name": "Ada L.", "balance": 2.5},
        headers=org.headers,
    )
    assert response.status_code == 200
    record = response.json()["record"]
    assert record["name"] == "Ada L." and record["balance"] == 2.5
    assert record["score"] is None and record["active"] is None
    assert record["created_at"] == ada["created_at"] and record["updated_at"] > ada["updated_at"]
    missing_required = await client.put(
        f"/v1/data/customers/{ada['id']}", json={"score": 1}, headers=org.headers
    )
    assert "name" in assert_status_error(missing_required, 422)
    assert_status_error(
        await client.put("/v1/data/customers/999999", json={"name": "x"}, headers=org.headers), 404
    )


async def test_patch_changes_only_given_columns(app, client):
    org = await _setup(app, client)
    [ada] = await insert(client, org, "customers", [{"name": "Ada", "score": 5, "active": True}])
    response = await client.patch(
        f"/v1/data/customers/{ada['id']}", json={"score": 6, "email": None}, headers=org.headers
    )
    assert response.status_code == 200
    record = response.json()["record"]
    assert record["score"] == 6 and record["active"] is True and record["name"] == "Ada"
    assert record["updated_at"] > ada["updated_at"]
    assert_status_error(
        await client.patch("/v1/data/customers/999999", json={"score": 1}, headers=org.headers), 404
    )
    assert_status_error(
        await client.patch("/v1/data/customers/999999", json={}, headers=org.headers), 404
    )


async def test_unique_violation_on_update_is_409_and_changes_nothing(app, client):
    org = await _setup(app, client)
    ada, alan = await insert(
        client,
        org,
        "customers",
        [{"name": "Ada", "email": "a@x"}, {"name": "Alan", "email": "b@x"}],
    )
    patch = await client.patch(
        f"/v1/data/customers/{alan['id']}", json={"email": "a@x"}, headers=org.headers
    )
    assert_status_error(patch, 409)
    put = await client.put(
        f"/v1/data/customers/{alan['id']}", json={"name": "A", "email": "a@x"}, headers=org.headers
    )
    assert_status_error(put, 409)
    again = await client.post(
        "/v1/data/customers", json={"records": [{"name": "X", "email": "b@x"}]}, headers=org.headers
    )
    assert_status_error(again, 409)
    unchanged = await client.get(f"/v1/data/customers/{alan['id']}", headers=org.headers)
    assert unchanged.json() == {"record": alan}


async def test_delete_record_and_delete_all(app, client):
    org = await _setup(app, client)
    ada, *_ = await insert(
        client, org, "customers", [{"name": "Ada"}, {"name": "B"}, {"name": "C"}]
    )
    response = await client.delete(f"/v1/data/customers/{ada['id']}", headers=org.headers)
    assert response.status_code == 200
    body = response.json()
    assert (
        body["success"] is True
        and isinstance(body["message"], str)
        and set(body) == {"success", "message"}
    )
    assert_status_error(
        await client.get(f"/v1/data/customers/{ada['id']}", headers=org.headers), 404
    )
    assert_status_error(
        await client.delete(f"/v1/data/customers/{ada['id']}", headers=org.headers), 404
    )

    everything = await client.delete("/v1/data/customers", headers=org.headers)
    assert everything.status_code == 200
    body = everything.json()
    assert (
        body["success"] is True and body["deleted_count"] == 2 and isinstance(body["message"], str)
    )
    assert (await client.delete("/v1/data/customers", headers=org.headers)).json()[
        "deleted_count"
    ] == 0
    # The schema stays.
    assert (await client.get("/v1/data/customers", headers=org.headers)).json()["total_count"] == 0


async def test_unknown_record_ids_are_404_and_malformed_are_422(app, client):
    org = await _setup(app, client)
    for record_id, status in (
        ("0", 404),
        ("-5", 404),
        ("424242", 404),
        ("99999999999999999999999", 404),
        ("abc", 422),
        ("1.5", 422),
        ("1e3", 422),
        ("1%20OR%201=1", 422),
    ):
        await _each_record_route(client, org, record_id, status)


async def _each_record_route(client, org, record_id, status):
    for method, body in (
        ("GET", None),
        ("DELETE", None),
        ("PUT", {"name": "x"}),
        ("PATCH", {"score": 1}),
    ):
        response = await client.request(
            method, f"/v1/data/customers/{record_id}", json=body, headers=org.headers
        )
        assert_status_error(response, status)


async def test_other_organizations_records_are_404(app, client):
    acme = await _setup(app, client)
    globex = await make_org(app, "Globex")
    await create_table(client, globex)
    [ada] = await insert(client, acme, "customers", [{"name": "Ada"}])
    for method, body in (
        ("GET", None),
        ("DELETE", None),
        ("PUT", {"name": "x"}),
        ("PATCH", {"score": 1}),
    ):
        response = await client.request(
            method, f"/v1/data/customers/{ada['id']}", json=body, headers=globex.headers
        )
        assert_status_error(response, 404)
    assert (await client.delete("/v1/data/customers", headers=globex.headers)).json()[
        "deleted_count"
    ] == 0
    assert (await client.get(f"/v1/data/customers/{ada['id']}", headers=acme.headers)).json()[
        "record"
    ] == ada


@pytest.mark.parametrize("body", [[1, 2], "text", 5, None])
async def test_write_bodies_must_be_objects(app, client, body):
    org = await _setup(app, client)
    [ada] = await insert(client, org, "customers", [{"name": "Ada"}])
    for method in ("PUT", "PATCH"):
        response = await client.request(
            method, f"/v1/data/customers/{ada['id']}", json=body, headers=org.headers
        )
        assert_status_error(response, 422)


async def test_unknown_table_is_404_on_every_record_route(app, client):
    org = await make_org(app)
    for method, path, body in (
        ("GET", "/v1/data/nothing", None),
        ("DELETE", "/v1/data/nothing", None),
        ("POST", "/v1/data/nothing", {"records": [{}]}),
        ("POST", "/v1/data/nothing/query", {}),
        ("GET", "/v1/data/nothing/1", None),
        ("PUT", "/v1/data/nothing/1", {}),
        ("PATCH", "/v1/data/nothing/1", {}),
        ("DELETE", "/v1/data/nothing/1", None),
    ):
        response = await client.request(method, path, json=body, headers=org.headers)
        assert_status_error(response, 404)
    # "tables" is reserved: never a table of records. Its paths belong to the table routes, so a
    # method they lack is a 405 naming theirs (http.paths).
    for method, path, allowed in (
        ("DELETE", "/v1/data/tables", "GET, HEAD, POST"),
        ("PATCH", "/v1/data/tables/1", "DELETE, GET, HEAD"),
        ("POST", "/v1/data/tables/query", "DELETE, GET, HEAD"),
    ):
        response = await client.request(method, path, json={}, headers=org.headers)
        assert_status_error(response, 405)
        assert response.headers["allow"] == allowed
