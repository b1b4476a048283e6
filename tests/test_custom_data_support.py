"""Shared helpers of the custom data tests (no tests here)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.factories import OrgHandle

CUSTOMERS: dict[str, Any] = {
    "name": "customers",
    "columns": [
        {"name": "name", "type": "TEXT", "required": True},
        {"name": "email", "type": "TEXT", "unique": True},
        {"name": "score", "type": "INTEGER", "indexed": True},
        {"name": "balance", "type": "FLOAT"},
        {"name": "active", "type": "BOOLEAN"},
        {"name": "synced_at", "type": "TIMESTAMP"},
        {"name": "profile", "type": "JSON"},
    ],
    "indexes": [["active", "score"]],
}


async def create_table(
    client: httpx.AsyncClient, org: OrgHandle, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    response = await client.post("/v1/data/tables", json=body or CUSTOMERS, headers=org.headers)
    assert response.status_code == 201, response.text
    table: dict[str, Any] = response.json()["table"]
    return table


async def insert(
    client: httpx.AsyncClient, org: OrgHandle, table: str, rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    response = await client.post(f"/v1/data/{table}", json={"records": rows}, headers=org.headers)
    assert response.status_code == 201, response.text
    created: list[dict[str, Any]] = response.json()["records"]
    return created


def assert_status_error(response: httpx.Response, status: int) -> str:
    """The STATUS family shape; returns the message."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"status", "success", "error", "errors"}, body
    assert body["status"] == "error" and body["success"] is False
    assert isinstance(body["error"], str) and body["errors"] and body["error"] == body["errors"][0]
    message: str = body["error"]
    return message
