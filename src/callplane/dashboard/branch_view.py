"""An agent's branches as the agent page lists them (head commit, how far ahead of main), and a
merge conflict as the three values of each path (the common ancestor's, each side's), read with
the same merge functions the API merges with (``agents/merge.py``)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from callplane.agents.diff import flatten
from callplane.agents.merge import ancestors, nearest_common_ancestor
from callplane.agents.refs import MAIN
from callplane.agents.service import find_branch, parents_map
from callplane.kit.tenancy import select_owned
from callplane.models.agents import AgentCommit

_ABSENT = "(not set)"


async def branch_rows(
    session: AsyncSession, org: int, agent_id: int, branches: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each branch with its head's message and its commits main does not have yet."""
    parents = await parents_map(session, org, agent_id)
    heads = [uuid.UUID(str(b["head"])) for b in branches]
    rows = await session.execute(
        select_owned(AgentCommit, org, AgentCommit.id, AgentCommit.message).where(
            AgentCommit.id.in_(heads)
        )
    )
    messages: dict[uuid.UUID, str] = {commit_id: message for commit_id, message in rows}
    main = next((b for b in branches if b["name"] == MAIN), None)
    in_main = ancestors(str(main["head"]), parents) if main else {}
    found = []
    for b in sorted(branches, key=lambda b: (b["name"] != MAIN, b["name"])):
        mine = ancestors(str(b["head"]), parents)
        found.append(
            {
                **b,
                "message": messages.get(uuid.UUID(str(b["head"])), "").split("\n", 1)[0],
                "ahead": len(mine.keys() - in_main.keys()),
                "behind": len(in_main.keys() - mine.keys()),
            }
        )
    return found


def _shown(leaves: dict[str, Any], path: str) -> Any:
    return leaves.get(path, _ABSENT)


async def conflict_rows(
    session: AsyncSession, org: int, agent_id: int, name: str, into: str, paths: list[str]
) -> list[dict[str, Any]]:
    """Each conflicting path with its value where the branches parted, on ``into`` and on
    ``name``: what the person must choose between."""
    source = await find_branch(session, org, agent_id, name)
    target = await find_branch(session, org, agent_id, into)
    if source is None or target is None:
        return []
    parents = await parents_map(session, org, agent_id)
    base_id = nearest_common_ancestor(str(target.head), str(source.head), parents)
    wanted = [target.head, source.head] + ([uuid.UUID(base_id)] if base_id else [])
    configs = {
        c.id: c.config
        for c in (
            await session.scalars(
                select(AgentCommit).where(
                    AgentCommit.organization_id == org, AgentCommit.id.in_(wanted)
                )
            )
        ).all()
    }
    ours = flatten(configs.get(target.head, {}))
    theirs = flatten(configs.get(source.head, {}))
    base = flatten(configs.get(uuid.UUID(base_id), {})) if base_id else {}
    return [
        {"path": p, "base": _shown(base, p), "ours": _shown(ours, p), "theirs": _shown(theirs, p)}
        for p in paths
    ]
