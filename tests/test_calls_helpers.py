"""Shared helpers of the calls and feedback tests (no tests here)."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select

from callplane.models.calls import Call
from tests.factories import runtime_of

#: Every field of SPEC's Call table, in its order.
CALL_FIELDS = [
    "id",
    "simple_uuid",
    "from_number",
    "to_number",
    "status",
    "started_at",
    "ended_at",
    "duration",
    "created_at",
    "updated_at",
    "transcripts",
    "screen_pop_token",
    "call_prompt",
    "answered_by",
    "language",
    "transferred",
    "handoff_metadata",
    "direction",
    "tags",
    "voice_id",
    "agent_speaks_first",
    "agent_id",
    "agent_branch",
    "agent_commit_id",
    "agent_branch_name",
    "external_identifiers",
    "params",
    "recording_presigned_url",
    "cart",
    "analyzers",
    "analysis_results",
    "summary",
    "keyterms",
    "first_message",  # extension (docs/api-contract.md, docs/engine-core.md)
    "campaign_id",  # extension: the campaign a call is an attempt of (docs/campaigns.md)
    "transcript_deleted_at",  # extension: when retention cleared it (docs/privacy.md)
]

AGENT_UUID = "6f1c2a1e-8a43-4c39-9a55-1d2f3e4a5b01"
VOICE_UUID = "0b7d6f3a-2c1e-4f5a-9b8c-7d6e5f4a3b01"
TAG_VIP = "9e8d7c6b-5a49-4382-a716-253443526101"
TAG_ESC = "9e8d7c6b-5a49-4382-a716-253443526102"

BASICS: dict[str, Any] = {
    "agents": [{"id": 1, "uuid": AGENT_UUID, "name": "Front desk"}],
    "voices": [{"id": VOICE_UUID, "name": "Aria"}],
    "call_tags": [
        {"id": TAG_VIP, "name": "VIP", "description": "High value", "color": "#d4af37"},
        {"id": TAG_ESC, "name": "Escalated", "description": None, "color": "#e5484d"},
    ],
}


def stamp(n: int) -> str:
    """A distinct, increasing created_at for fixture calls."""
    return f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}Z"


def assert_status_error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"status", "success", "error", "errors"}
    assert body["status"] == "error" and body["success"] is False
    assert isinstance(body["error"], str) and body["error"]
    assert body["errors"] and all(isinstance(e, str) for e in body["errors"])
    return body


def assert_find_error(response: httpx.Response, status: int) -> list[str]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"success", "errors"} and body["success"] is False
    assert body["errors"] and all(isinstance(e, str) for e in body["errors"])
    errors: list[str] = body["errors"]
    return errors


def assert_detail_list(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 422, response.text
    items: list[dict[str, Any]] = response.json()["detail"]
    assert set(response.json()) == {"detail"}
    assert items and all(set(i) == {"loc", "msg", "type"} for i in items)
    return items


def assert_detail_message(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"detail"} and isinstance(body["detail"], str)
    message: str = body["detail"]
    return message


async def count_calls(app: FastAPI, org_id: int) -> int:
    async with runtime_of(app).db.session(write=False) as session:
        counted = await session.scalar(
            select(func.count()).select_from(Call).where(Call.organization_id == org_id)
        )
        return int(counted or 0)
