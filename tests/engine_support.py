"""Shared helpers of the engine and webhook tests (no tests here)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from fastapi import FastAPI

from callplane.engine.agent import AgentCommit
from callplane.engine.worker import Engine
from callplane.models.calls import TERMINAL_STATUSES
from tests.factories import OrgHandle, runtime_of

TERMINAL = set(TERMINAL_STATUSES)

#: Short timings so calls go through their whole lifecycle in a fraction of a second.
FAST_ENGINE: dict[str, Any] = {
    "worker": "embedded",
    "worker_poll_seconds": 0.05,
    "simulated_call_seconds": 0.2,
    "worker_lease_seconds": 3.0,
    "worker_grace_seconds": 2.0,
}


async def engine_app(make_app: Any, **overrides: Any) -> FastAPI:
    app: FastAPI = await make_app(**{**FAST_ENGINE, **overrides})
    return app


@asynccontextmanager
async def agent_engine(
    app: FastAPI, config: dict[str, Any], **commit: Any
) -> AsyncIterator[Engine]:
    """The app's engine (as an embedded one), started, every call running the agent commit
    ``config`` (``commit``: the other fields of ``AgentCommit``); stopped on the way out."""

    async def agents(_runtime: Any, _call: Any) -> AgentCommit:
        return AgentCommit("commit-1", config, **commit)

    engine = app.state.engine = Engine(runtime_of(app), agents=agents)
    await engine.start()
    try:
        yield engine
    finally:
        await engine.stop()


async def create_call(
    client: httpx.AsyncClient, org: OrgHandle, to_number: str, **fields: Any
) -> str:
    response = await client.post(
        "/v1/calls", json={"to_number": to_number, **fields}, headers=org.headers
    )
    assert response.status_code == 201, response.text
    call_id: str = response.json()["call_id"]
    return call_id


async def wait_for_call(
    client: httpx.AsyncClient,
    org: OrgHandle,
    call_id: str,
    statuses: set[str] = TERMINAL,
    within: float = 15.0,
) -> dict[str, Any]:
    """Poll GET /calls/{uuid} until the call's status is one of ``statuses``."""
    deadline = time.monotonic() + within
    while True:
        response = await client.get(f"/v1/calls/{call_id}", headers=org.headers)
        assert response.status_code == 200, response.text
        call: dict[str, Any] = response.json()["call"]
        if call["status"] in statuses:
            return call
        if time.monotonic() > deadline:
            raise AssertionError(f"call {call_id} still {call['status']} after {within} s")
        await asyncio.sleep(0.03)


async def events_of(client: httpx.AsyncClient, org: OrgHandle, call_id: str) -> list[Any]:
    response = await client.get(f"/v1/calls/{call_id}/events", headers=org.headers)
    assert response.status_code == 200, response.text
    events: list[Any] = response.json()["events"]
    return events


def lifecycle(events: list[Any]) -> list[Any]:
    """The status moves only: without ``call.analyzed``, which the conversation adds after a
    completed call at a moment of its own."""
    return [e for e in events if e["type"] != "call.analyzed"]


async def wait_for_event(
    client: httpx.AsyncClient, org: OrgHandle, call_id: str, type_: str, within: float = 10.0
) -> list[Any]:
    """The call's events once one of type ``type_`` is among them (e.g. ``call.analyzed``,
    written after the call completed)."""
    deadline = time.monotonic() + within
    while True:
        events = await events_of(client, org, call_id)
        if any(e["type"] == type_ for e in events):
            return events
        if time.monotonic() > deadline:
            raise AssertionError(f"no {type_} event for call {call_id} after {within} s")
        await asyncio.sleep(0.03)
