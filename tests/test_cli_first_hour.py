"""The CLI a newcomer meets (issue 27): --version, orgs list, doctor, help that reads as
written, and serve refusing a taken port before anything starts."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from callplane import __version__
from tests.test_cli import callplane, ok_json


def test_version() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "callplane.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0 and result.stdout.strip() == f"callplane {__version__}"


def test_orgs_list(database_url: str) -> None:
    created = ok_json(callplane(database_url, "orgs", "create", "Acme", "--json"))
    listed = ok_json(callplane(database_url, "orgs", "list", "--json"))
    assert [(o["id"], o["name"]) for o in listed["organizations"]] == [(created["id"], "Acme")]
    plain = callplane(database_url, "orgs", "list")
    assert plain.returncode == 0 and plain.stdout.strip().endswith("\tAcme")


def test_help_is_not_cut_mid_sentence(database_url: str) -> None:
    env = {**os.environ, "COLUMNS": "200", "TERM": "dumb"}
    result = subprocess.run(
        [sys.executable, "-m", "callplane.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    demo = next(line for line in result.stdout.splitlines() if " demo " in line)
    assert "the sign-in and the API key" in demo, result.stdout


def test_doctor_names_every_part_and_how_to_fix(database_url: str, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "CALLPLANE_DATABASE_URL": database_url,
        "CALLPLANE_STORAGE_URL": f"file://{tmp_path / 'recordings'}",
        "CALLPLANE_LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "CALLPLANE_VOICE_ENGINE": "piper:xx_XX-nobody-low",
    }
    result = subprocess.run(
        [sys.executable, "-m", "callplane.cli", "doctor"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    lines = result.stdout.splitlines()
    parts = [line.split("  ")[0] for line in lines]
    assert parts == [
        "database",
        "storage",
        "speech model",
        "espeak-ng",
        "Piper voices",
        "voice",
        "end-of-turn model",
        "SIP listener",
        "LLM",
    ], result.stdout
    # The voice calls will really speak with: a voice not installed is replaced by espeak-ng.
    [voice] = [line for line in lines if line.startswith("voice ")]
    assert "calls speak with espeak-ng (piper:xx_XX-nobody-low is not installed here)" in voice
    assert all(" OK " in line for line in lines[:2]), result.stdout
    [llm] = [line for line in lines if line.startswith("LLM")]
    assert " FIX " in llm and "CALLPLANE_LLM_BASE_URL" in llm
    assert result.returncode == 1


def test_serve_on_a_taken_port_is_one_log_line_and_exit_1(database_url: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "callplane.cli", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "CALLPLANE_DATABASE_URL": database_url},
            check=False,
        )
    assert result.returncode == 1
    assert result.stdout == ""  # no banner
    [line] = result.stderr.strip().splitlines()
    entry = json.loads(line)
    assert entry["level"] == "error" and entry["port"] == port
