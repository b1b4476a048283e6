"""Tables: POST/GET/DELETE /v1/data/tables (docs/api-contract.md), real tables and constraints."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect

from tests.factories import load, make_org, runtime_of
from tests.test_custom_data_support import CUSTOMERS, assert_status_error, create_table, insert


async def test_create_table_returns_201_with_table(app, client):
    org = await make_org(app)
    response = await client.post("/v1/data/tables", json=CUSTOMERS, headers=org.headers)
    assert response.status_code == 201
    body = response.json()
    assert body["success"] is True
    table = body["table"]
    assert set(table) == {"id", "name", "columns", "indexes", "created_at", "updated_at"}
    assert table["name"] == "customers"
    assert table["columns"][0] == {
        "name": "name",
        "type": "TEXT",
        "required": True,
        "unique": False,
        "indexed": False,
        "references": None,
    }
    assert [c["type"] for c in table["columns"]] == [
        "TEXT",
        "TEXT",
        "INTEGER",
        "FLOAT",
        "BOOLEAN",
        "TIMESTAMP",
        "JSON",
    ]
    assert table["indexes"] == [["active", "score"]]
    assert table["created_at"].endswith("Z")

    listed = await client.get("/v1/data/tables", headers=org.headers)
    assert listed.status_code == 200
    assert listed.json() == {"tables": [table]}
    one = await client.get(f"/v1/data/tables/{table['id']}", headers=org.headers)
    assert one.status_code == 200
    assert one.json() == {"table": table}


def _columns(*columns):
    return {"name": "t", "columns": list(columns)}


INVALID_DEFINITIONS = [
    pytest.param({**CUSTOMERS, "name": "tables"}, id="reserved-name"),
    pytest.param({**CUSTOMERS, "name": "has space"}, id="name-space"),
    pytest.param({**CUSTOMERS, "name": "naïve"}, id="name-unicode"),
    pytest.param({**CUSTOMERS, "name": "x" * 64}, id="name-64-chars"),
    pytest.param({**CUSTOMERS, "name": ""}, id="name-empty"),
    pytest.param({**CUSTOMERS, "name": 5}, id="name-not-string"),
    pytest.param({"name": "t"}, id="columns-missing"),
    pytest.param({"name": "t", "columns": []}, id="columns-empty"),
    pytest.param(_columns({"name": "Name", "type": "TEXT"}), id="column-uppercase"),
    pytest.param(_columns({"name": "1a", "type": "TEXT"}), id="column-leading-digit"),
    pytest.param(_columns({"name": "a" * 64, "type": "TEXT"}), id="column-64-chars"),
    pytest.param(_columns({"name": 'a"; drop', "type": "TEXT"}), id="column-injection"),
    pytest.param(_columns({"name": "id", "type": "TEXT"}), id="column-managed-id"),
    pytest.param(_columns({"name": "created_at", "type": "TEXT"}), id="column-managed-ts"),
    pytest.param(_columns({"name": "per_page", "type": "TEXT"}), id="column-list-param"),
    pytest.param(_columns({"name": "sort_by", "type": "TEXT"}), id="column-sort-param"),
    pytest.param(
        _columns({"name": "a", "type": "TEXT"}, {"name": "a", "type": "INTEGER"}),
        id="column-duplicate",
    ),
    pytest.param(_columns({"name": "a", "type": "VARCHAR"}), id="type-unknown"),
    pytest.param(_columns({"name": "a"}), id="type-missing"),
    pytest.param(_columns({"name": "a", "type": "TEXT", "required": "yes"}), id="required-str"),
    pytest.param(_columns({"name": "a", "type": "TEXT", "unique": 1}), id="unique-int"),
    pytest.param(
        _columns({"name": "a", "type": "INTEGER", "references": "nowhere"}),
        id="references-unknown",
    ),
    pytest.param(
        _columns({"name": "a", "type": "TEXT", "references": "t"}), id="references-not-int"
    ),
    pytest.param({**_columns({"name": "a", "type": "TEXT"}), "indexes": [["b"]]}, id="ix-unknown"),
    pytest.param({**_columns({"name": "a", "type": "TEXT"}), "indexes": [[]]}, id="ix-empty"),
    pytest.param(
        {**_columns({"name": "a", "type": "TEXT"}), "indexes": [["a", "a"]]}, id="ix-duplicate"
    ),
    pytest.param(
        {
            "name": "t",
            "columns": [{"name": f"c{i}", "type": "TEXT"} for i in range(9)],
            "indexes": [[f"c{i}" for i in range(9)]],
        },
        id="ix-9-columns",
    ),
    pytest.param({**_columns({"name": "a", "type": "TEXT"}), "indexes": "a"}, id="ix-not-list"),
    pytest.param([CUSTOMERS], id="not-object"),
]


async def test_invalid_table_definitions_are_422_and_create_nothing(app, client):
    org = await make_org(app)
    for case in INVALID_DEFINITIONS:
        response = await client.post("/v1/data/tables", json=case.values[0], headers=org.headers)
        assert_status_error(response, 422)
    assert (await client.get("/v1/data/tables", headers=org.headers)).json() == {"tables": []}


async def test_column_type_names_are_case_insensitive_and_stored_upper(app, client):
    org = await make_org(app)
    table = await create_table(client, org, _columns({"name": "a", "type": "integer"}))
    assert table["columns"][0]["type"] == "INTEGER"


async def test_duplicate_table_name_is_409(app, client):
    org = await make_org(app)
    await create_table(client, org)
    response = await client.post("/v1/data/tables", json=CUSTOMERS, headers=org.headers)
    assert_status_error(response, 409)
    # Names are case-sensitive, like the path that names them.
    await create_table(client, org, {**CUSTOMERS, "name": "Customers"})


async def _inspect(app, table_id):
    def run(connection):
        inspector = inspect(connection)
        name = f"udt_{table_id}"
        return {
            "columns": {c["name"]: c for c in inspector.get_columns(name)},
            "indexes": inspector.get_indexes(name),
            "uniques": inspector.get_unique_constraints(name),
            "fks": inspector.get_foreign_keys(name),
            "pk": inspector.get_pk_constraint(name)["constrained_columns"],
            "tables": inspector.get_table_names(),
        }

    async with runtime_of(app).db.engine.connect() as conn:
        return await conn.run_sync(run)


async def test_user_table_is_a_real_table_with_constraints(app, client):
    org = await make_org(app)
    customers = await create_table(client, org)
    orders = await create_table(
        client,
        org,
        {
            "name": "orders",
            "columns": [
                {"name": "customer_id", "type": "INTEGER", "references": "customers"},
                {"name": "total", "type": "FLOAT", "required": True},
            ],
        },
    )
    info = await _inspect(app, customers["id"])
    assert list(info["columns"])[:4] == ["organization_id", "id", "created_at", "updated_at"]
    assert info["pk"] == ["id"]
    assert info["columns"]["name"]["nullable"] is False
    assert info["columns"]["email"]["nullable"] is True
    assert [u["column_names"] for u in info["uniques"]] == [["organization_id", "email"]]
    # PostgreSQL also lists the unique constraint's own index.
    indexed = sorted(
        i["column_names"] for i in info["indexes"] if not i.get("duplicates_constraint")
    )
    assert indexed == [
        ["organization_id", "active", "score", "id"],
        ["organization_id", "score", "id"],
    ]
    order_info = await _inspect(app, orders["id"])
    [fk] = order_info["fks"]
    assert fk["referred_table"] == f"udt_{customers['id']}"
    assert fk["constrained_columns"] == ["customer_id"] and fk["referred_columns"] == ["id"]
    assert order_info["columns"]["total"]["nullable"] is False


async def test_references_are_enforced(app, client):
    org = await make_org(app)
    await create_table(client, org)
    await create_table(
        client,
        org,
        {
            "name": "orders",
            "columns": [{"name": "customer_id", "type": "INTEGER", "references": "customers"}],
        },
    )
    [ada] = await insert(client, org, "customers", [{"name": "Ada"}])
    missing = await client.post(
        "/v1/data/orders", json={"records": [{"customer_id": ada["id"] + 100}]}, headers=org.headers
    )
    assert "customer_id" in assert_status_error(missing, 422)
    [order] = await insert(client, org, "orders", [{"customer_id": ada["id"]}])
    # A referenced record cannot be deleted, nor the table it lives in.
    held = await client.delete(f"/v1/data/customers/{ada['id']}", headers=org.headers)
    assert_status_error(held, 409)
    held_all = await client.delete("/v1/data/customers", headers=org.headers)
    assert_status_error(held_all, 409)
    assert (
        await client.get(f"/v1/data/customers/{ada['id']}", headers=org.headers)
    ).status_code == 200
    patch = await client.patch(
        f"/v1/data/orders/{order['id']}", json={"customer_id": 999999}, headers=org.headers
    )
    assert_status_error(patch, 422)


async def test_self_reference(app, client):
    org = await make_org(app)
    await create_table(
        client,
        org,
        {
            "name": "people",
            "columns": [{"name": "manager", "type": "INTEGER", "references": "people"}],
        },
    )
    [boss] = await insert(client, org, "people", [{}])
    [worker] = await insert(client, org, "people", [{"manager": boss["id"]}])
    assert worker["manager"] == boss["id"]
    bad = await client.post(
        "/v1/data/people", json={"records": [{"manager": 12345}]}, headers=org.headers
    )
    assert_status_error(bad, 422)


async def test_delete_table_rules(app, client):
    org = await make_org(app)
    customers = await create_table(client, org)
    orders = await create_table(
        client,
        org,
        {
            "name": "orders",
            "columns": [{"name": "customer_id", "type": "INTEGER", "references": "customers"}],
        },
    )
    await insert(client, org, "customers", [{"name": "Ada"}, {"name": "Alan"}])

    # Referenced by orders: 409 even though that table is empty.
    referenced = await client.delete(f"/v1/data/tables/{customers['id']}", headers=org.headers)
    assert "orders" in assert_status_error(referenced, 409)
    gone = await client.delete(f"/v1/data/tables/{orders['id']}", headers=org.headers)
    assert gone.status_code == 200 and gone.json() == {"success": True}
    assert f"udt_{orders['id']}" not in (await _inspect(app, customers["id"]))["tables"]

    # Holds records: 409 and nothing changes.
    holding = await client.delete(f"/v1/data/tables/{customers['id']}", headers=org.headers)
    assert "records" in assert_status_error(holding, 409)
    cleared = await client.delete("/v1/data/customers", headers=org.headers)
    assert cleared.json()["deleted_count"] == 2
    deleted = await client.delete(f"/v1/data/tables/{customers['id']}", headers=org.headers)
    assert deleted.json() == {"success": True}
    assert_status_error(
        await client.get(f"/v1/data/tables/{customers['id']}", headers=org.headers), 404
    )
    assert_status_error(await client.get("/v1/data/customers", headers=org.headers), 404)
    # The name is free again, and the new table is a new table.
    again = await create_table(
        client, org, {"name": "customers", "columns": [{"name": "x", "type": "TEXT"}]}
    )
    assert again["id"] != customers["id"]
    assert (await client.get("/v1/data/customers", headers=org.headers)).json()["total_count"] == 0


@pytest.mark.parametrize("table_id", ["0", "-1", "999999", "99999999999999999999999"])
async def test_unknown_table_id_is_404(app, client, table_id):
    org = await make_org(app)
    assert_status_error(await client.get(f"/v1/data/tables/{table_id}", headers=org.headers), 404)
    assert_status_error(
        await client.delete(f"/v1/data/tables/{table_id}", headers=org.headers), 404
    )


@pytest.mark.parametrize("table_id", ["abc", "1.5", "1;drop"])
async def test_malformed_table_id_is_422(app, client, table_id):
    org = await make_org(app)
    assert_status_error(await client.get(f"/v1/data/tables/{table_id}", headers=org.headers), 422)
    assert_status_error(
        await client.delete(f"/v1/data/tables/{table_id}", headers=org.headers), 422
    )


async def test_tenancy_same_table_name_in_two_organizations(app, client):
    acme = await make_org(app, "Acme")
    globex = await make_org(app, "Globex")
    acme_table = await create_table(client, acme)
    globex_table = await create_table(client, globex)
    assert acme_table["id"] != globex_table["id"]
    [ada] = await insert(client, acme, "customers", [{"name": "Ada"}])
    await insert(client, globex, "customers", [{"name": "Grace"}, {"name": "Linus"}])

    acme_list = (await client.get("/v1/data/customers", headers=acme.headers)).json()
    assert [r["name"] for r in acme_list["records"]] == ["Ada"]
    assert acme_list["records"][0]["organization_id"] == acme.id
    globex_list = (await client.get("/v1/data/customers", headers=globex.headers)).json()
    assert globex_list["total_count"] == 2
    assert {r["organization_id"] for r in globex_list["records"]} == {globex.id}
    assert (await client.get("/v1/data/tables", headers=globex.headers)).json()["tables"] == [
        globex_table
    ]
    # Another organization's table id and record id are 404, never 403.
    for method in ("get", "delete"):
        response = await client.request(
            method.upper(), f"/v1/data/tables/{acme_table['id']}", headers=globex.headers
        )
        assert_status_error(response, 404)
    # Globex's customers table never holds Acme's record, whatever the id.
    if ada["id"] not in {r["id"] for r in globex_list["records"]}:
        assert_status_error(
            await client.get(f"/v1/data/customers/{ada['id']}", headers=globex.headers), 404
        )
    unknown = await make_org(app, "Initech")
    assert_status_error(await client.get("/v1/data/customers", headers=unknown.headers), 404)


async def test_schema_changes_in_another_process_are_seen(make_app):
    first = await make_app()
    second = await make_app()
    org = await make_org(first)
    from tests.conftest import client_for

    async with client_for(first) as one, client_for(second) as two:
        table = await create_table(
            one, org, {"name": "things", "columns": [{"name": "a", "type": "TEXT"}]}
        )
        await insert(one, org, "things", [{"a": "x"}])
        assert (await two.get("/v1/data/things", headers=org.headers)).json()["records"][0][
            "a"
        ] == "x"
        await one.delete("/v1/data/things", headers=org.headers)
        assert (
            await one.delete(f"/v1/data/tables/{table['id']}", headers=org.headers)
        ).status_code == 200
        assert_status_error(await two.get("/v1/data/things", headers=org.headers), 404)
        await create_table(
            one, org, {"name": "things", "columns": [{"name": "b", "type": "INTEGER"}]}
        )
        [created] = await insert(two, org, "things", [{"a": "ignored", "b": 7}])
        assert created["b"] == 7 and "a" not in created


async def test_fixture_tables_section(app, client):
    org = await make_org(app)
    created = await load(
        app,
        org,
        {
            "tables": [
                {**CUSTOMERS, "records": [{"id": 10, "name": "Ada", "score": 5}, {"name": "Alan"}]},
                {
                    "name": "orders",
                    "columns": [
                        {"name": "customer_id", "type": "INTEGER", "references": "customers"}
                    ],
                    "records": [{"customer_id": 10}],
                },
            ]
        },
    )
    assert [t["name"] for t in created["tables"]] == ["customers", "orders"]
    listed = (await client.get("/v1/data/customers?sort_direction=asc", headers=org.headers)).json()
    assert [(r["id"], r["name"]) for r in listed["records"]] == [(10, "Ada"), (11, "Alan")]
    [new] = await insert(client, org, "customers", [{"name": "Grace"}])
    assert new["id"] == 12


@pytest.mark.parametrize(
    "document",
    [
        pytest.param(
            {"tables": [{"name": "bad name", "columns": [{"name": "a", "type": "TEXT"}]}]},
            id="name",
        ),
        pytest.param({"tables": [{**CUSTOMERS, "records": [{"score": 1}]}]}, id="required"),
        pytest.param({"tables": [{**CUSTOMERS, "records": [{"name": "a", "id": "x"}]}]}, id="id"),
        pytest.param({"tables": [CUSTOMERS, CUSTOMERS]}, id="duplicate"),
    ],
)
async def test_invalid_fixture_tables_change_nothing(app, client, document):
    from callplane.loader import LoadError

    org = await make_org(app)
    with pytest.raises(LoadError):
        await load(app, org, document)
    assert (await client.get("/v1/data/tables", headers=org.headers)).json() == {"tables": []}


async def test_a_table_dropped_under_a_request_is_404_not_500(app, client):
    # What a request sees on PostgreSQL when another one drops the table between its catalog
    # read and its statement; simulated by dropping the real table behind the catalog's back.
    from sqlalchemy import text

    org = await make_org(app)
    table = await create_table(client, org)
    await insert(client, org, "customers", [{"name": "Ada"}])
    async with runtime_of(app).db.engine.begin() as conn:
        await conn.execute(text(f'DROP TABLE "udt_{table["id"]}"'))
    for method, path, body in (
        ("GET", "/v1/data/customers", None),
        ("GET", "/v1/data/customers/1", None),
        ("PATCH", "/v1/data/customers/1", {"score": 1}),
        ("POST", "/v1/data/customers", {"records": [{"name": "x"}]}),
        ("POST", "/v1/data/customers/query", {}),
        ("DELETE", "/v1/data/customers", None),
    ):
        response = await client.request(method, path, json=body, headers=org.headers)
        assert_status_error(response, 404)
