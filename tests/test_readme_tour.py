"""The README's tour runs as written against a live server set up as ``make run`` sets it up (the
demo data, the engine inside the server, loopback webhooks allowed), and every documented output
is what the server prints (``tests/readme_tour.py`` reads the markup)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from callplane.brain.discovery import discover
from callplane.settings import Settings
from tests import readme_tour
from tests.conftest import BACKEND
from tests.live_server import live_server, seed_org
from tests.llm_stub import StubLLM

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: The API route by route, moved out of the README: its examples run in the same tour.
API_DOC = ROOT / "docs" / "api.md"


def _tour() -> list[readme_tour.Step]:
    """The README's steps, then docs/api.md's, in one shell (the API's use ``$KEY`` and the
    demo data as the README's first call left them)."""
    return readme_tour.steps(README.read_text()) + readme_tour.steps(
        API_DOC.read_text(), "docs/api.md"
    )


DOCUMENTED_URL = "http://127.0.0.1:8000"
DOCUMENTED_KEY = "export KEY=cp_demo_..."
#: Where Ollama's server listens unless told otherwise.
OLLAMA_PORT = 11434


def test_the_markup_is_read() -> None:
    tour = _tour()
    assert any(step.source == "docs/api.md" for step in tour)
    assert len(tour) >= 10
    assert sum(step.expected is not None for step in tour) >= 8
    assert readme_tour.matches('{"a":...,"b":2}', '{"a":[1,{"x":1}],"b":2}\n')
    assert not readme_tour.matches('{"a":1}', '{"a":2}')


def _settled(url: str, headers: dict[str, str]) -> None:
    """The demo's queued calls are dialled at start-up, as under `make run`: let them end."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        busy = 0
        for status in ("enqueued", "dialing", "in_progress"):
            page = httpx.get(f"{url}/v1/calls", params={"status": status}, headers=headers)
            busy += page.json()["total_count"]
        if busy == 0:
            return
        time.sleep(0.5)
    raise AssertionError("the demo's calls did not end")


def _found(brain: StubLLM) -> dict[str, str]:
    """The brain's settings as `serve` sets them when it finds a server on this machine."""
    found = discover([urlsplit(brain.base_url).port or 0])
    assert found is not None and found.base_url == brain.base_url
    return {"llm_base_url": found.base_url, "llm_model": found.model}


@pytest.mark.slow
@pytest.mark.skipif(BACKEND != "sqlite", reason="make run serves SQLite")
def test_the_readme_tour_prints_what_it_documents(database_url: str, tmp_path: Path) -> None:
    tour = _tour()
    org = seed_org(database_url, tmp_path)
    settings = {"worker": "embedded", "webhook_allow_loopback": True, "signing_key": None}
    # The knowledge section and "Give the agent a brain" ask an agent in text turns: the one
    # stand-in, a stub brain, found running on this machine as `serve` finds one.
    brain = StubLLM(after_tool=["Worn shoes cannot be returned, but we can repair them."])
    with (
        brain,
        live_server(database_url, tmp_path, **settings, **_found(brain)) as server,
    ):
        _settled(server.url, org.headers)
        marker = f"@@tour-{uuid.uuid4().hex}"
        text = readme_tour.script(tour, marker)
        text = text.replace(DOCUMENTED_KEY, f"export KEY={org.api_key}")
        text = text.replace(DOCUMENTED_URL, server.url)
        # The tour runs elsewhere than the checkout: the CLI is this environment's.
        text = text.replace(".venv/bin/callplane", str(Path(sys.executable).parent / "callplane"))
        ran = subprocess.run(
            ["bash", "-c", text],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    printed = readme_tour.outputs(ran.stdout, marker, len(tour))
    wrong = [
        f"{step.source} line {step.line}: {step.command}\n  documented: {step.expected}\n"
        f"  printed:    {output.strip().replace(server.url, DOCUMENTED_URL)}"
        for step, output in zip(tour, printed, strict=True)
        if step.expected is not None
        and not readme_tour.matches(step.expected, output.replace(server.url, DOCUMENTED_URL))
    ]
    assert not wrong, "\n".join(wrong) + "\n" + ran.stderr[-2000:]


def test_each_brain_choice_listens_where_serve_looks() -> None:
    """ "Give the agent a brain" cannot start Ollama or llama.cpp here (the tour's brain is the
    stub, found as they would be): each local choice's command serves on a port `serve` looks
    at by default, and the hosted choice names settings that exist."""
    section = README.read_text().split("## Give the agent a brain", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    looked_at = Settings(_env_file=None).llm_ports  # type: ignore[call-arg]
    assert "ollama serve" in block and OLLAMA_PORT in looked_at
    ports = [int(p) for p in re.findall(r"llama-server .*--port (\d+)", block)]
    ports += [int(p) for p in re.findall(r"llama_cpp.server .*--port (\d+)", block)]
    assert len(ports) == 2 and all(port in looked_at for port in ports)
    assert "--interrupt_requests false" in block
    named = set(re.findall(r"CALLPLANE_([A-Z_]+)=", block))
    assert named >= {"LLM_BASE_URL", "LLM_MODEL", "LLM_API_KEY"}
    assert all(name.lower() in Settings.model_fields for name in named), named
