"""The agent page's test chat: a text conversation with the branch being edited, through the same
turn as ``POST /v1/agents/{uuid}/conversations`` (tools mocked unless asked to run). The page
holds the conversation so far in the form (as the API's caller would); nothing is stored."""

from __future__ import annotations

import json
import uuid
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response

from callplane.agents import conversations
from callplane.agents.schemas import ConversationRequest
from callplane.dashboard.forms import fields
from callplane.dashboard.rendering import render
from callplane.dashboard.routing import CurrentPerson, dashboard_router, runtime_of
from callplane.errors import InvalidInput, Unavailable
from callplane.http.deps import SessionDep

router = dashboard_router()

#: The conversation a page may send back: beyond this the oldest lines are dropped.
MOST_MESSAGES = 100


def _said(raw: str) -> list[dict[str, str]]:
    """The conversation so far, from the form (anything unreadable starts it afresh)."""
    try:
        items = json.loads(raw) if raw else []
    except json.JSONDecodeError:
        return []
    said = [
        {"role": str(i["role"]), "text": str(i["text"])}
        for i in items
        if isinstance(i, dict) and i.get("role") in ("user", "assistant") and "text" in i
    ]
    return said[-MOST_MESSAGES:]


@router.post("/agents/{agent_uuid}/chat")
async def chat(
    request: Request, agent_uuid: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    form = await fields(request)
    said = _said(form.get("said", ""))
    text = form.get("text", "").strip()
    if form.get("restart"):
        said, text = [], ""
    if text:
        said.append({"role": "user", "text": text})
    shown: list[dict[str, Any]] = list(said)
    problem = None
    try:
        body = ConversationRequest(
            ref=form.get("branch") or "main",
            messages=said,
            tools="run" if form.get("run_tools") else "mock",
        )
        turn = await conversations.take_turn(
            session, runtime_of(request), person.organization_id, agent_uuid, body
        )
    except Unavailable as exc:
        problem = f'{exc.message}. See the README: "Give the agent a brain".'
    except (InvalidInput, ValidationError) as exc:
        problem = str(getattr(exc, "message", None) or exc)
    else:
        for entry in turn["entries"]:
            shown.append(entry)
            if entry.get("role") == "assistant" and entry.get("text"):
                said.append({"role": "assistant", "text": entry["text"]})
        if turn.get("ended"):
            problem = "The agent ended the call."
    return render(
        request,
        "_agent_chat.html",
        agent_id=agent_uuid,
        branch=form.get("branch") or "main",
        shown=shown,
        said=json.dumps(said, ensure_ascii=False),
        problem=problem,
        run_tools=bool(form.get("run_tools")),
    )
