"""Tables: POST/GET/DELETE /v1/data/tables (DESIGN §5, §6), real tables and constraints."""

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
        "TEXT", "TEXT", "INTEGER", "FLOAT", "BOOLEAN", "TIMESTAMP", "JSON"
    ]
    assert table["indexes"] == [["active", "score"]]
    assert table["created_at"].endswith("Z")

    listed = await client.get("/v1/data/tables", headers=org.headers)
    assert listed.status_code == 200
    assert listed.json() == {"tables": [table]}
    one = await client.get(f"/v1/data/tables/{table['id']}", headers=org.headers)
    assert one.status_code == 200
    assert one.json() == {"table": table}
