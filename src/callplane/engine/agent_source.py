"""Where a call's agent commit comes from: the agents domain, read once when the conversation
starts (docs/agents.md). The commit was pinned on the call when it was created (outbound) or
answered (inbound), so a branch head that moves later changes nothing here."""

from __future__ import annotations

import uuid
from typing import Any

from callplane.agents.contacts import contact_data
from callplane.agents.service import load_commit_to_run
from callplane.agents.variables import VariableSources, render
from callplane.engine.agent import AgentCommit
from callplane.engine.conversation.session import CallContext
from callplane.models.base import utcnow
from callplane.runtime import Runtime


async def commit_of_call(runtime: Runtime, call: CallContext) -> AgentCommit:
    """The call's commit config and a renderer over its variables: the call's params, the other
    party's contact data (read now), the config's defaults and the call's own fields."""
    if call.agent_commit_id is None:
        return AgentCommit()
    try:
        commit_id = uuid.UUID(call.agent_commit_id)
    except ValueError:
        return AgentCommit()
    other_party = call.from_number if call.direction == "inbound" else call.to_number
    async with runtime.db.session(write=False) as session:
        commit = await load_commit_to_run(session, call.organization_id, commit_id)
        contact = await contact_data(session, call.organization_id, other_party)
    if commit is None:  # the organization's commits only: never another's
        return AgentCommit()
    config = commit.config
    defaults: dict[str, Any] = config.get("variables") or {}
    sources = VariableSources(
        params=call.params,
        contact=contact,
        defaults=defaults,
        from_number=call.from_number,
        to_number=call.to_number,
        direction=call.direction,
        now=utcnow(),
    )
    return AgentCommit(
        commit_id=call.agent_commit_id,
        config=config,
        render=lambda template: render(template, sources),
        tools_secret=commit.tools_secret,
        agent_name=commit.agent_name,
    )
