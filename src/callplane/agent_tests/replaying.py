"""Replays: the caller's lines of real calls, said again to a candidate commit as text turns.

A tool the candidate asks with the same name and arguments as the original call did gets the
original answer; any other tool the mock ``{"mocked": true}``. Each call is compared: its tool
calls and whether the agent ended it, before and after, with the new transcript and summary.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.agent_tests.checks import tool_calls
from callplane.agent_tests.playing import play_text
from callplane.agent_tests.queue import Claim
from callplane.agents.config import read_config
from callplane.agents.conversations import prepare
from callplane.agents.service import load_commit_to_run
from callplane.agents.text_tools import MOCKED, Answer
from callplane.brain.base import Brain, BrainError, ToolCall
from callplane.brain.build import build_brain
from callplane.brain.summary import summarize
from callplane.errors import InvalidInput, NotFound
from callplane.kit.tenancy import select_owned
from callplane.models.calls import Call
from callplane.runtime import Runtime

CALL_NOT_FOUND = "Call not found"


def _key(name: str, arguments: Mapping[str, Any]) -> str:
    return name + orjson.dumps(dict(arguments), option=orjson.OPT_SORT_KEYS).decode()


def _original(call: Call) -> dict[str, Any]:
    """What a replay keeps of a call: its caller's lines, tool calls and their answers."""
    transcript: list[dict[str, Any]] = list(call.transcripts or [])
    answers: dict[str, str] = {}
    pending: list[str] = []
    for entry in transcript:
        if entry.get("function_name") and entry.get("role") == "assistant":
            pending.append(_key(entry["function_name"], entry.get("arguments") or {}))
        elif entry.get("role") == "tool" and pending:
            answers.setdefault(pending.pop(0), str(entry.get("text") or ""))
    calls = tool_calls(transcript)
    return {
        "call_id": str(call.id),
        "original_commit_id": call.agent_commit_id,
        "params": call.params or {},
        "lines": [
            str(e["text"])
            for e in transcript
            # A backchannel ("uh-huh") was no turn: a replay does not say it as one.
            if e.get("role") == "user"
            and e.get("text")
            and not e.get("function_name")
            and not e.get("backchannel")
        ][:30],
        "tool_calls": [{"name": n, "arguments": a} for n, a in calls],
        "answers": answers,
        "ended": any(n == "end_call" for n, _ in calls),
    }


async def replay_work(
    session: AsyncSession,
    organization_id: int,
    agent_uuid: uuid.UUID,
    *,
    call_ids: Sequence[uuid.UUID] | None,
    last: int | None,
) -> dict[str, Any]:
    """The calls a replay works on, copied now; NotFound for a call that is not this agent's
    (another organization's included)."""
    query = select_owned(Call, organization_id).where(Call.agent_uuid == agent_uuid)
    if call_ids is not None:
        wanted = list(dict.fromkeys(call_ids))
        found = {c.id: c for c in await session.scalars(query.where(Call.id.in_(wanted)))}
        if len(found) != len(wanted):
            raise NotFound(CALL_NOT_FOUND)
        calls = [found[i] for i in wanted]
    else:
        calls = list(
            await session.scalars(
                query.where(Call.status == "completed")
                .order_by(Call.created_at.desc(), Call.id.desc())
                .limit(last or 1)
            )
        )
        if not calls:
            raise InvalidInput("last: the agent has no completed calls", loc=("body",))
    return {"calls": [_original(c) for c in calls]}


@dataclass(frozen=True)
class Reused:
    """The original call's answers to the same questions; the mock to any other."""

    answers: Mapping[str, str]

    async def answer(self, call: ToolCall) -> Answer:
        text = self.answers.get(_key(call.name, call.arguments), MOCKED)
        return Answer(text, call.name == "end_call")


async def run_replay(
    runtime: Runtime, claim: Claim
) -> tuple[str, list[dict[str, Any]], str | None]:
    async with runtime.db.session(write=False) as session:
        commit = await load_commit_to_run(session, claim.organization_id, claim.commit_id)
        if commit is None:
            return "error", [], "the replay's commit no longer exists"
        typed = read_config(commit.config)
        scenes = [
            await prepare(session, claim.organization_id, typed, original["params"], None)
            for original in claim.work["calls"]
        ]
    brain = build_brain(runtime.settings)
    if brain is None:
        return "error", [], "No language model is configured (CALLPLANE_LLM_BASE_URL)"
    limit = asyncio.Semaphore(8)

    async def one(original: dict[str, Any], scene: Any) -> dict[str, Any]:
        async with limit:
            return await _replay_call(brain, commit.config, typed.summary_prompt, original, scene)

    try:
        results = await asyncio.gather(
            *(one(o, s) for o, s in zip(claim.work["calls"], scenes, strict=True))
        )
    except BrainError as exc:
        return "error", [], f"The language model failed: {exc}"
    finally:
        await brain.aclose()
    return "done", list(results), None


async def _replay_call(
    brain: Brain,
    config: dict[str, Any],
    summary_prompt: str | None,
    original: dict[str, Any],
    scene: Any,
) -> dict[str, Any]:
    spec = {"turns": [{"user": line} for line in original["lines"]]}
    played = await play_text(
        brain, Reused(original["answers"]), config, spec, scene, caller_model=None
    )
    asked = tool_calls(played.transcript)
    after = [{"name": n, "arguments": a} for n, a in asked]
    before = [_key(str(c["name"]), c["arguments"]) for c in original["tool_calls"]]
    summary = await summarize(brain, played.transcript, summary_prompt)
    return {
        "call_id": original["call_id"],
        "original_commit_id": original["original_commit_id"],
        "same_tool_calls": before == [_key(n, a) for n, a in asked],
        "tool_calls": {"before": original["tool_calls"], "after": after},
        "ended": {"before": original["ended"], "after": played.ended},
        "transcript_after": played.transcript,
        "summary_after": summary.text,
    }
