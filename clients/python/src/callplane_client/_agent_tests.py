"""Proving an agent change (docs/agent-tests.md): ``agents.tests(id)``, ``agents.test_runs(id)``,
``agents.replays(id)`` and ``agents.traffic(id)``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from callplane_client._resources import List, _drop_none, _many, _one, _page, _Resource, _segment
from callplane_client._transport import Request
from callplane_client.models import AgentTest, Page, Replay, Result, TestRun, Traffic


class _OfAgent(_Resource):
    def __init__(self, send: Any, is_async: bool, agent_id: str) -> None:
        super().__init__(send, is_async)
        self._base = f"/v1/agents/{_segment(agent_id)}"


class AgentTests(_OfAgent):
    def create(self, name: str, **spec: Any) -> AgentTest:
        """A test: ``turns`` or ``caller``, and any of ``params``, ``contact``, ``mocks``,
        ``expect``, ``judge``, ``repeat``, ``pass_rate``."""
        body = {"name": name, **spec}
        return self._send(  # type: ignore[no-any-return]
            Request("POST", f"{self._base}/tests", _one(AgentTest, "test"), json=body)
        )

    def list(self) -> List[AgentTest]:
        return self._send(Request("GET", f"{self._base}/tests", _many(AgentTest, "tests")))  # type: ignore[no-any-return]

    def get(self, name: str) -> AgentTest:
        path = f"{self._base}/tests/{_segment(name)}"
        return self._send(Request("GET", path, _one(AgentTest, "test")))  # type: ignore[no-any-return]

    def update(self, name: str, **changes: Any) -> AgentTest:
        path = f"{self._base}/tests/{_segment(name)}"
        return self._send(Request("PATCH", path, _one(AgentTest, "test"), json=changes))  # type: ignore[no-any-return]

    def delete(self, name: str) -> Result:
        path = f"{self._base}/tests/{_segment(name)}"
        return self._send(Request("DELETE", path, _one(Result)))  # type: ignore[no-any-return]


class AgentTestRuns(_OfAgent):
    def create(
        self, ref: str | None = None, tests: Sequence[str] | None = None, mode: str | None = None
    ) -> TestRun:
        """A run in the background (status ``running``): poll ``get`` until it is not."""
        body = _drop_none(
            {"ref": ref, "tests": None if tests is None else list(tests), "mode": mode}
        )
        path = f"{self._base}/test_runs"
        return self._send(Request("POST", path, _one(TestRun, "test_run"), json=body))  # type: ignore[no-any-return]

    def list(
        self, commit_id: str | None = None, page: int = 1, page_size: int = 20
    ) -> Page[TestRun]:
        params = _drop_none({"commit_id": commit_id, "page": page, "page_size": page_size})
        path = f"{self._base}/test_runs"
        return self._send(Request("GET", path, _page(TestRun, "test_runs"), params))  # type: ignore[no-any-return]

    def iter(self, commit_id: str | None = None, page_size: int = 100) -> Iterator[TestRun]:
        return self._walk(
            lambda page: self.list(commit_id=commit_id, page=page, page_size=page_size)
        )

    def get(self, run_id: str) -> TestRun:
        path = f"{self._base}/test_runs/{_segment(run_id)}"
        return self._send(Request("GET", path, _one(TestRun, "test_run")))  # type: ignore[no-any-return]


class AgentReplays(_OfAgent):
    def create(
        self,
        ref: str | None = None,
        call_ids: Sequence[str] | None = None,
        last: int | None = None,
    ) -> Replay:
        """Exactly one of ``call_ids`` (≤ 100 calls of this agent) or ``last`` (1–100)."""
        body = _drop_none(
            {"ref": ref, "call_ids": None if call_ids is None else list(call_ids), "last": last}
        )
        path = f"{self._base}/replays"
        return self._send(Request("POST", path, _one(Replay, "replay"), json=body))  # type: ignore[no-any-return]

    def get(self, replay_id: str) -> Replay:
        path = f"{self._base}/replays/{_segment(replay_id)}"
        return self._send(Request("GET", path, _one(Replay, "replay")))  # type: ignore[no-any-return]


class AgentTraffic(_OfAgent):
    def set(self, splits: Sequence[Mapping[str, Any]]) -> Traffic:  # noqa: A003
        """2–5 ``{"branch", "weight"}`` with weights summing to 100."""
        body = {"splits": [dict(s) for s in splits]}
        path = f"{self._base}/traffic"
        return self._send(Request("PUT", path, _one(Traffic, "traffic"), json=body))  # type: ignore[no-any-return]

    def get(self) -> Traffic:
        return self._send(Request("GET", f"{self._base}/traffic", _one(Traffic, "traffic")))  # type: ignore[no-any-return]

    def delete(self) -> Traffic:
        path = f"{self._base}/traffic"
        return self._send(Request("DELETE", path, _one(Traffic, "traffic")))  # type: ignore[no-any-return]
