"""Shared helpers of the campaign tests (no tests here)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
from fastapi import FastAPI

from tests.factories import OrgHandle, load, make_org

AGENT = "6f1c2a1e-8a43-4c39-9a55-1d2f3e4a5b01"
ALL_DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


def open_zone(now: datetime | None = None) -> str:
    """A fixed-offset IANA zone where it is between 12:00 and 13:00 now: a campaign whose
    windows are 08:00–21:00 every day there is open for hours, whatever time the test runs."""
    hour = (now or datetime.now(UTC)).hour
    offset = 12 - hour  # local = UTC + offset
    if offset > 12:
        offset -= 24
    if offset < -12:
        offset += 24
    # Etc/GMT signs are inverted: Etc/GMT-3 is UTC+3.
    return "Etc/GMT" if offset == 0 else f"Etc/GMT{'-' if offset > 0 else '+'}{abs(offset)}"


def open_schedule() -> dict[str, Any]:
    return {
        "timezone": open_zone(),
        "windows": [{"days": ALL_DAYS, "start": "08:00", "end": "21:00"}],
    }


async def org_with_agent(app: FastAPI, name: str = "Acme", number: int = 1) -> OrgHandle:
    org = await make_org(app, name)
    agent = AGENT if number == 1 else f"7a2d3b2f-9b54-4d4a-8b66-2e3f4a5b6c0{number}"
    await load(app, org, {"agents": [{"id": number, "uuid": agent, "name": "Reminders"}]})
    return org


async def create_campaign(
    client: httpx.AsyncClient, org: OrgHandle, agent: str = AGENT, **fields: Any
) -> dict[str, Any]:
    body = {"name": "Renewals", "agent_id": agent, **fields}
    response = await client.post("/v1/campaigns", json=body, headers=org.headers)
    assert response.status_code == 201, response.text
    campaign: dict[str, Any] = response.json()["campaign"]
    return campaign


async def add_csv(
    client: httpx.AsyncClient, org: OrgHandle, campaign_id: str, text: str | bytes
) -> httpx.Response:
    return await client.post(
        f"/v1/campaigns/{campaign_id}/recipients",
        content=text.encode() if isinstance(text, str) else text,
        headers={**org.headers, "Content-Type": "text/csv"},
    )


def status_error(response: httpx.Response, code: int, mentions: str) -> dict[str, Any]:
    assert response.status_code == code, response.text
    body: dict[str, Any] = response.json()
    assert body["status"] == "error" and body["success"] is False, body
    assert mentions in body["error"], body
    return body
