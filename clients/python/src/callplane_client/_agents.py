"""Agents and their versioned configuration (docs/agents.md): ``agents``, ``agents.commits(id)``,
``agents.branches(id)`` and ``agents.diff``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from callplane_client._agent_tests import AgentReplays, AgentTestRuns, AgentTests, AgentTraffic
from callplane_client._resources import List, _drop_none, _many, _one, _page, _Resource, _segment
from callplane_client._transport import Request
from callplane_client.models import (
    Agent,
    AgentCreated,
    Branch,
    Change,
    Commit,
    ConversationTurn,
    Page,
    Result,
)


def _secret(response: Any) -> str:
    return str(response.json()["tools_secret"])


class Agents(_Resource):
    def create(
        self, name: str, config: Mapping[str, Any] | None = None, message: str | None = None
    ) -> AgentCreated:
        """A new agent with branch ``main`` holding ``config``; the result carries the
        ``tools_secret``, shown only here."""
        body = _drop_none({"name": name, "config": dict(config or {}), "message": message})
        return self._send(Request("POST", "/v1/agents", _one(AgentCreated), json=body))  # type: ignore[no-any-return]

    def list(self, page: int = 1, page_size: int = 20) -> Page[Agent]:
        params = {"page": page, "page_size": page_size}
        return self._send(Request("GET", "/v1/agents", _page(Agent, "agents"), params))  # type: ignore[no-any-return]

    def iter(self, page_size: int = 100) -> Iterator[Agent]:
        return self._walk(lambda page: self.list(page=page, page_size=page_size))

    def get(self, id: str) -> Agent:  # noqa: A002
        return self._send(Request("GET", f"/v1/agents/{_segment(id)}", _one(Agent, "agent")))  # type: ignore[no-any-return]

    def update(
        self,
        id: str,  # noqa: A002
        name: str | None = None,
        *,
        merge_requires_passing_tests: bool | None = None,
    ) -> Agent:
        """Rename the agent, or turn its merge gate on or off."""
        body = _drop_none(
            {"name": name, "merge_requires_passing_tests": merge_requires_passing_tests}
        )
        path = f"/v1/agents/{_segment(id)}"
        return self._send(Request("PATCH", path, _one(Agent, "agent"), json=body))  # type: ignore[no-any-return]

    def archive(self, id: str) -> Result:  # noqa: A002
        return self._send(Request("DELETE", f"/v1/agents/{_segment(id)}", _one(Result)))  # type: ignore[no-any-return]

    def rotate_tools_secret(self, id: str) -> str:  # noqa: A002
        path = f"/v1/agents/{_segment(id)}/tools_secret"
        return self._send(Request("POST", path, _secret))  # type: ignore[no-any-return]

    def diff(self, id: str, from_: str, to: str) -> List[Change]:  # noqa: A002
        """Changes by JSON Pointer path between two refs (commit ids or branch names)."""
        params = {"from": from_, "to": to}
        path = f"/v1/agents/{_segment(id)}/diff"
        return self._send(Request("GET", path, _many(Change, "changes"), params))  # type: ignore[no-any-return]

    def converse(
        self,
        id: str,  # noqa: A002
        messages: Sequence[Mapping[str, str]] = (),
        *,
        ref: str | None = None,
        params: Mapping[str, Any] | None = None,
        contact: str | None = None,
        tools: str | None = None,
    ) -> ConversationTurn:
        """One text-only turn of a branch or commit (``ref``; default main)."""
        body = _drop_none(
            {
                "ref": ref,
                "messages": [dict(m) for m in messages],
                "params": None if params is None else dict(params),
                "contact": contact,
                "tools": tools,
            }
        )
        path = f"/v1/agents/{_segment(id)}/conversations"
        return self._send(Request("POST", path, _one(ConversationTurn), json=body))  # type: ignore[no-any-return]

    def commits(self, id: str) -> AgentCommits:  # noqa: A002
        return AgentCommits(self._send, self._async, id)

    def branches(self, id: str) -> AgentBranches:  # noqa: A002
        return AgentBranches(self._send, self._async, id)

    def tests(self, id: str) -> AgentTests:  # noqa: A002
        return AgentTests(self._send, self._async, id)

    def test_runs(self, id: str) -> AgentTestRuns:  # noqa: A002
        return AgentTestRuns(self._send, self._async, id)

    def replays(self, id: str) -> AgentReplays:  # noqa: A002
        return AgentReplays(self._send, self._async, id)

    def traffic(self, id: str) -> AgentTraffic:  # noqa: A002
        return AgentTraffic(self._send, self._async, id)


class _OfAgent(_Resource):
    def __init__(self, send: Any, is_async: bool, agent_id: str) -> None:
        super().__init__(send, is_async)
        self._base = f"/v1/agents/{_segment(agent_id)}"


class AgentCommits(_OfAgent):
    def create(
        self,
        *,
        config: Mapping[str, Any] | None = None,
        changes: Mapping[str, Any] | None = None,
        revert_to: str | None = None,
        branch: str | None = None,
        message: str | None = None,
        expected_head: str | None = None,
    ) -> Commit:
        """Exactly one of ``config``, ``changes`` (JSON Merge Patch) or ``revert_to``. A config
        equal to the head's returns the head."""
        body = _drop_none(
            {
                "config": None if config is None else dict(config),
                "changes": None if changes is None else dict(changes),
                "revert_to": revert_to,
                "branch": branch,
                "message": message,
                "expected_head": expected_head,
            }
        )
        path = f"{self._base}/commits"
        return self._send(Request("POST", path, _one(Commit, "commit"), json=body))  # type: ignore[no-any-return]

    def list(self, branch: str | None = None, page: int = 1, page_size: int = 20) -> Page[Commit]:
        params = _drop_none({"branch": branch, "page": page, "page_size": page_size})
        path = f"{self._base}/commits"
        return self._send(Request("GET", path, _page(Commit, "commits"), params))  # type: ignore[no-any-return]

    def iter(self, branch: str | None = None, page_size: int = 100) -> Iterator[Commit]:
        return self._walk(lambda page: self.list(branch=branch, page=page, page_size=page_size))

    def get(self, commit_id: str) -> Commit:
        path = f"{self._base}/commits/{_segment(commit_id)}"
        return self._send(Request("GET", path, _one(Commit, "commit")))  # type: ignore[no-any-return]


class AgentBranches(_OfAgent):
    def create(self, name: str, from_: str | None = None) -> Branch:
        body = _drop_none({"name": name, "from": from_})
        path = f"{self._base}/branches"
        return self._send(Request("POST", path, _one(Branch, "branch"), json=body))  # type: ignore[no-any-return]

    def move(self, name: str, head: str, expected_head: str | None = None) -> Branch:
        """Point the branch at ``head``: a rollback is one call."""
        body = _drop_none({"head": head, "expected_head": expected_head})
        path = f"{self._base}/branches/{_segment(name)}"
        return self._send(Request("PATCH", path, _one(Branch, "branch"), json=body))  # type: ignore[no-any-return]

    def merge(self, name: str, into: str | None = None, expected_head: str | None = None) -> Commit:
        body = _drop_none({"into": into, "expected_head": expected_head})
        path = f"{self._base}/branches/{_segment(name)}/merge"
        return self._send(Request("POST", path, _one(Commit, "commit"), json=body))  # type: ignore[no-any-return]

    def delete(self, name: str) -> Result:
        path = f"{self._base}/branches/{_segment(name)}"
        return self._send(Request("DELETE", path, _one(Result)))  # type: ignore[no-any-return]
