"""`callplane agents test` and the Python client's agents.tests / test_runs / replays / traffic,
against a live server whose embedded worker runs the tests (the stub LLM as the agent)."""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from callplane_client import APIError, Callplane
from typer.testing import CliRunner

from callplane.cli import agents as agents_cli
from callplane.cli.main import app as cli
from tests.agent_tests_support import CONFIG
from tests.live_server import live_server, seed_org
from tests.llm_stub import StubLLM


@pytest.fixture
def served(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(agents_cli, "POLL_SECONDS", 0.05)
    org = seed_org(database_url, tmp_path, demo=False)
    with (
        StubLLM(replies=["Monday at nine works."]) as llm,
        live_server(
            database_url,
            tmp_path,
            llm_base_url=llm.base_url,
            worker="embedded",
            worker_poll_seconds=0.05,
        ) as live,
    ):
        yield live.url, org.api_key


def _cli(url: str, key: str, *args: str):
    env = {"CALLPLANE_URL": url, "CALLPLANE_API_KEY": key}
    return CliRunner().invoke(cli, ["agents", "test", *args], env=env)


def test_the_cli_runs_the_suite_and_exits_1_on_failure(served, tmp_path: Path) -> None:
    url, key = served
    with Callplane(key, base_url=url) as api:
        agent = api.agents.create("Riley", CONFIG).agent
        tests = api.agents.tests(agent.id)
        made = tests.create("monday", turns=[{"user": "Monday?"}], expect={"said": "Monday"})
        assert made.name == "monday" and made.expect["said"] == ["Monday"]
        assert [t.name for t in tests.list()] == ["monday"]

        report = tmp_path / "junit.xml"
        passed = _cli(url, key, agent.id, "--junit", str(report))
        assert passed.exit_code == 0, passed.output
        assert "PASS  monday" in passed.output and "passed: 1/1" in passed.output
        suite = ET.parse(report).getroot()
        assert suite.get("tests") == "1" and suite.get("failures") == "0"

        tests.update("monday", expect={"said": "Tuesday"})
        failed = _cli(url, key, agent.id, "--ref", "main", "--junit", str(report))
        assert failed.exit_code == 1, failed.output
        assert "FAIL  monday" in failed.output
        assert "expect.said.0: /Tuesday/: expected the agent to say it" in failed.output
        case = ET.parse(report).getroot().find("testcase")
        assert case is not None and case.get("name") == "monday"
        failure = case.find("failure")
        assert failure is not None and "/Tuesday/" in (failure.text or "")

        refused = _cli(url, key, agent.id, "--ref", "nope")
        assert refused.exit_code == 1 and "422" in refused.output
        assert _cli(url, "", agent.id).exit_code == 1

        runs = api.agents.test_runs(agent.id)
        listed = runs.list()
        assert listed.total_count == 2 and listed.items[0].status == "failed"
        one = runs.get(listed.items[0].id)
        assert one.results[0].runs[0].failures[0].startswith("expect.said.0")
        started = runs.create(tests=["monday"])
        assert started.status == "running"
        while runs.get(started.id).status == "running":
            time.sleep(0.05)

        gated = api.agents.update(agent.id, merge_requires_passing_tests=True)
        assert gated.merge_requires_passing_tests is True and gated.name == "Riley"
        api.agents.branches(agent.id).create("canary")
        split = [{"branch": "main", "weight": 80}, {"branch": "canary", "weight": 20}]
        assert api.agents.traffic(agent.id).set(split).splits == split
        assert api.agents.traffic(agent.id).get().splits == split
        assert api.agents.traffic(agent.id).delete().splits == []
        with pytest.raises(APIError) as no_calls:
            api.agents.replays(agent.id).create(last=5)
        assert no_calls.value.status_code == 422
        assert tests.delete("monday").success is True
