"""Helpers of the agents tests: create an agent and commit over HTTP."""

from __future__ import annotations

from typing import Any

import httpx

from tests.factories import OrgHandle


async def create_agent(
    client: httpx.AsyncClient, org: OrgHandle, config: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    response = await client.post(
        "/v1/agents",
        headers=org.headers,
        json={"name": "Riley", "config": config or {"prompt": "Be kind."}, **extra},
    )
    assert response.status_code == 201, response.text
    agent: dict[str, Any] = response.json()["agent"]
    return agent


async def commit(
    client: httpx.AsyncClient, org: OrgHandle, agent_id: str, expect: int = 201, **body: Any
) -> dict[str, Any]:
    response = await client.post(f"/v1/agents/{agent_id}/commits", headers=org.headers, json=body)
    assert response.status_code == expect, response.text
    result: dict[str, Any] = response.json()
    return result


def head(agent: dict[str, Any], branch: str = "main") -> str:
    return next(str(b["head"]) for b in agent["branches"] if b["name"] == branch)
