"""The CLI does not surprise (issue 40): run from another directory it never creates an empty
database behind the person's back, ``doctor`` says where things are and how many organizations
the database holds, and ``demo`` names the address actually served."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from callplane.engine.drain import StopSignals
from tests.llm_stub import StubLLM
from tests.test_cli import callplane, ok_json


def _run(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The CLI with the default settings (a relative SQLite path), from ``cwd``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CALLPLANE_")}
    return subprocess.run(
        [sys.executable, "-m", "callplane.cli", *args],
        cwd=cwd,
        env={**clean, "CALLPLANE_LOG_LEVEL": "warning", **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["orgs", "list"],
        ["orgs", "create", "Acme"],
        ["keys", "list", "--org", "1"],
        ["load", "--org", "1", "-"],
        ["users", "create", "a@example.com", "--org", "1"],
    ],
    ids=lambda a: "-".join(a[:2]),
)
def test_commands_refuse_a_database_that_does_not_exist(tmp_path: Path, args: list[str]) -> None:
    result = _run(tmp_path, *args)
    expected = tmp_path.resolve() / "callplane.db"
    assert result.returncode == 1, result.stdout
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and str(expected) in line
    assert "callplane migrate" in line
    assert not expected.exists()


def test_migrate_and_demo_create_the_database_and_then_the_others_use_it(tmp_path: Path) -> None:
    assert _run(tmp_path, "migrate").returncode == 0
    assert (tmp_path / "callplane.db").exists()
    listed = _run(tmp_path, "orgs", "list", "--json")
    assert ok_json(listed) == {"organizations": []}


def test_doctor_prints_absolute_paths_and_counts_the_organizations(database_url: str) -> None:
    ok_json(callplane(database_url, "orgs", "create", "A", "--json"))
    ok_json(callplane(database_url, "orgs", "create", "B", "--json"))
    result = callplane(database_url, "doctor")
    [database] = [line for line in result.stdout.splitlines() if line.startswith("database")]
    assert " OK " in database and "2 organizations" in database, result.stdout
    if database_url.startswith("sqlite"):
        path = database_url.removeprefix("sqlite:///")
        assert str(Path(path).resolve()) in database


def test_doctor_on_a_missing_database_says_where_it_looked_and_creates_nothing(
    tmp_path: Path,
) -> None:
    result = _run(tmp_path, "doctor", CALLPLANE_STORAGE_URL="file://./recordings")
    lines = result.stdout.splitlines()
    [database] = [line for line in lines if line.startswith("database")]
    assert " FIX " in database and str(tmp_path.resolve() / "callplane.db") in database
    assert "callplane migrate" in database
    [storage] = [line for line in lines if line.startswith("storage")]
    assert str(tmp_path.resolve() / "recordings") in storage
    assert result.returncode == 1
    assert not (tmp_path / "callplane.db").exists()


def test_demo_prints_the_address_serve_answers_on_and_the_brain_it_finds(tmp_path: Path) -> None:
    # `make run` is `demo` then `serve`: demo looks for a brain on this machine as serve does.
    with StubLLM(model="qwen2.5:1.5b") as stub:
        port = str(urlsplit(stub.base_url).port)
        result = _run(tmp_path, "demo", "--port", "9123", CALLPLANE_LLM_DISCOVER_PORTS=port)
    assert result.returncode == 0, result.stderr
    assert "Dashboard: http://127.0.0.1:9123/dashboard/" in result.stdout
    assert (
        f"Brain: qwen2.5:1.5b at {stub.base_url} (found running on this machine: "
        "`callplane serve` uses it)" in result.stdout
    ), result.stdout
    assert result.stdout.strip().splitlines()[-1].startswith("cp_")  # the key stays last
    behind = _run(
        tmp_path,
        "demo",
        CALLPLANE_PUBLIC_URL="https://calls.example.com",
        CALLPLANE_LLM_DISCOVER_PORTS="",
    )
    assert "Dashboard: https://calls.example.com/dashboard/" in behind.stdout
    [none] = [line for line in behind.stdout.splitlines() if line.startswith("Brain: ")]
    assert none.startswith("Brain: none (start Ollama") and "Give the agent a brain" in none


async def test_the_drain_says_a_second_ctrl_c_stops_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    signals = StopSignals(asyncio.get_running_loop())
    with caplog.at_level(logging.INFO, logger="callplane.engine"):
        signals.received()
    assert signals.requested.is_set() and not signals.hurry.is_set()
    [said] = [r.getMessage() for r in caplog.records]
    assert "a second Ctrl-C" in said and "stops at once" in said


@pytest.mark.parametrize("path", ["/v1", "/v1/", "/docs", "/docs/"])
async def test_the_api_root_and_docs_lead_to_the_docs(client: Any, path: str) -> None:
    response = await client.get(path)
    assert response.status_code in (307, 308), response.text
    assert response.headers["location"] == "/v1/docs"
