"""A branch's history: the commits reachable from its head, newest first.

Commits are immutable, so the set a commit reaches never changes: each process remembers it per
head commit. After the first read of a head, a page of its history is one query for that page
(``IN`` the page's ids), however long the history; the first read walks the agent's commit
graph once (one indexed query of ids, parents and times).
"""

from __future__ import annotations

from collections import OrderedDict

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.agents.merge import ancestors
from callplane.kit.tenancy import select_owned
from callplane.models.agents import AgentCommit

#: Heads remembered per process (each a tuple of ids: a 1,000-commit history is ~60 KB).
MAX_HEADS = 256
_REACHABLE: OrderedDict[tuple[int, str], tuple[str, ...]] = OrderedDict()


async def reachable(
    session: AsyncSession, organization_id: int, agent_id: int, head: str
) -> tuple[str, ...]:
    """The ids of the commits ``head`` reaches (itself included), newest first (by creation
    time, then id: the order of the agent's whole history)."""
    key = (organization_id, head)
    found = _REACHABLE.get(key)
    if found is not None:
        _REACHABLE.move_to_end(key)
        return found
    rows = await session.execute(
        select_owned(
            AgentCommit,
            organization_id,
            AgentCommit.id,
            AgentCommit.parents,
            AgentCommit.created_at,
        ).where(AgentCommit.agent_id == agent_id)
    )
    parents: dict[str, list[str]] = {}
    created = {}
    for commit_id, commit_parents, created_at in rows:
        parents[str(commit_id)] = list(commit_parents)
        created[str(commit_id)] = created_at
    reached = [c for c in ancestors(head, parents) if c in created]
    ordered = tuple(sorted(reached, key=lambda c: (created[c], c), reverse=True))
    _REACHABLE[key] = ordered
    if len(_REACHABLE) > MAX_HEADS:
        _REACHABLE.popitem(last=False)
    return ordered
