"""A web call from a real headless Chromium (docs/web-calls.md), through the dashboard's "Talk to
this agent" page and callplane-web.js: its fake microphone speaks an espeak-ng sentence, the live
transcript shows those words and the agent's reply, and the call ends completed, recorded.

WebRTC in a browser connects over non-loopback addresses only, so the whole scenario
(``tests/web_call_scenario.py``) runs in a private network namespace (``unshare -n``) with a
veth pair of 10.x addresses that exist only there: no packet leaves it.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import wave
from pathlib import Path
from typing import Any

import pytest

from tests.browser import chromium_path
from tests.conftest import BACKEND, IN_CI

pytestmark = [pytest.mark.slow, pytest.mark.realtime]

SENTENCE = "I would like to book a table for four people on Friday evening."
ROOT = Path(__file__).resolve().parent.parent


def _microphone(path: Path) -> None:
    """The sentence, after 4 s of silence (the call connects and the agent greets meanwhile),
    then 2 s of silence; Chromium plays the file once as the microphone."""
    spoken = subprocess.run(
        ["espeak-ng", "--stdout", SENTENCE], check=True, capture_output=True, timeout=30
    ).stdout
    with wave.open(io.BytesIO(spoken)) as reader:
        rate, width = reader.getframerate(), reader.getsampwidth()
        frames = reader.readframes(reader.getnframes())
    with wave.open(str(path), "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(width)
        writer.setframerate(rate)
        writer.writeframes(bytes(4 * rate * width) + frames + bytes(2 * rate * width))


def _namespaces_available() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


def _scenario(args: dict[str, Any]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run(
        ["unshare", "-n", sys.executable, "-m", "tests.web_call_scenario", json.dumps(args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_talk_to_an_agent_from_chromium(database_url: str, tmp_path: Path) -> None:
    chromium = chromium_path()
    if not _namespaces_available():
        message = "no private network namespace here (unshare -n and ip are needed)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    if BACKEND != "sqlite":
        # PostgreSQL listens on the host's network, which the namespace cannot reach; its Unix
        # socket can be (a file, not a network address).
        socket_dir = Path("/var/run/postgresql")
        if not (socket_dir / ".s.PGSQL.5432").exists():
            pytest.skip("PostgreSQL has no Unix socket to reach from the namespace")
        from sqlalchemy.engine import make_url

        parsed = make_url(database_url)
        database_url = parsed.set(
            host=None, port=None, query={"host": str(socket_dir)}
        ).render_as_string(False)
    wav = tmp_path / "speech.wav"
    _microphone(wav)
    outcome = _scenario(
        {
            "database_url": database_url,
            "storage": str(tmp_path / "recordings"),
            "wav": str(wav),
            "chromium": chromium,
        }
    )

    live = " ".join(outcome["live"]).lower()
    assert "table" in live and "friday" in live, outcome["live"]
    assert "Agent: Certainly, a table for four on Friday. Goodbye!" in outcome["live"]

    call = outcome["call"]
    assert call["status"] == "completed", call
    assert call["direction"] == "web"
    assert call["to_number"] is None and call["from_number"] is None
    said = [e["text"].lower() for e in call["transcripts"] if e["role"] == "user"]
    assert any("table" in text and "friday" in text for text in said), call["transcripts"]
    replies = [e.get("text") for e in call["transcripts"] if e["role"] == "assistant"]
    assert "Certainly, a table for four on Friday. Goodbye!" in replies
    assert call["summary"], "the call was analysed after it ended"
    types = [e["type"] for e in outcome["events"]]
    assert types[0] == "call.in_progress" and "call.ended" in types and "call.analyzed" in types
    assert call["recording_presigned_url"]
    agent_voiced, caller_voiced = outcome["voiced"]
    assert agent_voiced > 1.0 and caller_voiced > 1.0, outcome["voiced"]
