"""A brain in the first hour (issue 40): ``serve`` finds an OpenAI-compatible server already
running on this machine and uses it, saying so in its banner; ``doctor`` sends it one real
request with a tool and says whether tool calling works. The server is the LLM stub, on a port
the test names (the ports looked at are a setting)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from callplane.brain.discovery import discover
from tests.llm_stub import StubLLM
from tests.test_cli import callplane, ok_json
from tests.test_first_run import _free_port


def _port(stub: StubLLM) -> int:
    port = urlsplit(stub.base_url).port
    assert port is not None
    return port


def _env(database_url: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CALLPLANE_")}
    return clean | {
        "CALLPLANE_DATABASE_URL": database_url,
        "CALLPLANE_LOG_LEVEL": "warning",
        "CALLPLANE_STORAGE_URL": f"file://{tmp_path / 'recordings'}",
        "CALLPLANE_VOICE_ENGINE": "espeak-ng:en-us",  # the brain is under test, not the voice
        **extra,
    }


def test_the_first_port_answering_with_a_model_is_the_brain() -> None:
    closed = _free_port()
    with StubLLM(model="qwen2.5:1.5b") as stub:
        found = discover([closed, _port(stub)])
    assert found is not None
    assert found.base_url == stub.base_url and found.model == "qwen2.5:1.5b"
    assert discover([closed]) is None


def test_doctor_finds_the_local_brain_and_checks_it_calls_tools(
    database_url: str, tmp_path: Path
) -> None:
    with StubLLM() as stub:
        env = _env(database_url, tmp_path, CALLPLANE_LLM_DISCOVER_PORTS=str(_port(stub)))
        result = subprocess.run(
            [sys.executable, "-m", "callplane.cli", "doctor"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        asked = [r for r in stub.requests if r.get("tools")]
    [llm] = [line for line in result.stdout.splitlines() if line.startswith("LLM")]
    assert " OK " in llm and stub.base_url in llm and "stub-model" in llm, result.stdout
    assert "found running on this machine" in llm and "tool calling works" in llm
    [request] = asked  # one real request, offering a tool
    assert request["model"] == "stub-model" and request["stream"] is False


def test_doctor_says_when_the_model_does_not_call_tools(database_url: str, tmp_path: Path) -> None:
    with StubLLM(tool_calling=False) as stub:
        env = _env(
            database_url,
            tmp_path,
            CALLPLANE_LLM_BASE_URL=stub.base_url,
            CALLPLANE_LLM_MODEL="tiny",
            CALLPLANE_LLM_DISCOVER_PORTS="",
        )
        result = subprocess.run(
            [sys.executable, "-m", "callplane.cli", "doctor"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    [llm] = [line for line in result.stdout.splitlines() if line.startswith("LLM")]
    assert " FIX " in llm and "called no tool" in llm, result.stdout
    assert result.returncode == 1


def test_serve_uses_a_brain_running_on_this_machine_and_says_so(
    database_url: str, tmp_path: Path
) -> None:
    org = ok_json(callplane(database_url, "orgs", "create", "Brainy", "--json"))
    headers = {"Authorization": f"Bearer {org['api_key']}"}
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with StubLLM(opening="Hello from the stub brain.", replies=["Friday works."]) as stub:
        env = _env(database_url, tmp_path, CALLPLANE_LLM_DISCOVER_PORTS=str(_port(stub)))
        server = subprocess.Popen(
            [sys.executable, "-m", "callplane.cli", "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=tmp_path,
        )
        try:
            assert server.stdout is not None
            banner = server.stdout.readline()
            assert f"brain stub-model at {stub.base_url} (found running on this machine)" in (
                banner
            ), banner
            deadline = time.monotonic() + 30
            while True:
                try:
                    if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline and server.poll() is None
                time.sleep(0.1)
            agent = httpx.post(
                f"{base}/v1/agents",
                json={"name": "Ada", "config": {"prompt": "You are Ada."}},
                headers=headers,
                timeout=30,
            )
            assert agent.status_code == 201, agent.text
            turn = httpx.post(
                f"{base}/v1/agents/{agent.json()['agent']['id']}/conversations",
                json={"messages": [{"role": "user", "text": "Can I come on Friday?"}]},
                headers=headers,
                timeout=30,
            )
        finally:
            server.terminate()
            server.wait(30)
            server.stdout.close()
    assert turn.status_code == 200, turn.text
    assert "Friday works." in turn.text
