"""Helpers of the agent-tests tests: write tests and wait for runs over HTTP."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from tests.factories import OrgHandle

#: The stub's tools: an agent with one function tool besides end_call.
CONFIG: dict[str, Any] = {
    "prompt": "You are Riley at Bright Smiles.",
    "first_message": "Hi, this is Bright Smiles.",
    "tools": [
        {
            "type": "function",
            "name": "book",
            "url": "https://example.com/book",
            "parameters": {
                "type": "object",
                "properties": {"day": {"type": "string"}, "time": {"type": "string"}},
            },
        }
    ],
}


async def add_test(
    client: httpx.AsyncClient, org: OrgHandle, agent_id: str, status: int = 201, **body: Any
) -> dict[str, Any]:
    response = await client.post(f"/v1/agents/{agent_id}/tests", headers=org.headers, json=body)
    assert response.status_code == status, response.text
    result: dict[str, Any] = response.json()
    return result


async def start_run(
    client: httpx.AsyncClient, org: OrgHandle, agent_id: str, **body: Any
) -> dict[str, Any]:
    response = await client.post(f"/v1/agents/{agent_id}/test_runs", headers=org.headers, json=body)
    assert response.status_code == 201, response.text
    run: dict[str, Any] = response.json()["test_run"]
    assert run["status"] == "running" and run["results"] == []
    return run


async def finished(
    client: httpx.AsyncClient, org: OrgHandle, agent_id: str, run_id: str, within: float = 60
) -> dict[str, Any]:
    """The run once a worker has settled it."""
    deadline = time.monotonic() + within
    while True:
        response = await client.get(
            f"/v1/agents/{agent_id}/test_runs/{run_id}", headers=org.headers
        )
        assert response.status_code == 200, response.text
        run: dict[str, Any] = response.json()["test_run"]
        if run["status"] != "running":
            return run
        assert time.monotonic() < deadline, f"the run is still running: {run}"
        await asyncio.sleep(0.05)
