"""First run: serving on any port with a banner and working recording URLs, `keys list`, load
errors as one line, and the demo data loadable into any organization."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner, Result

from callplane.cli.banner import banner, default_public_url
from callplane.cli.main import app as cli
from callplane.settings import Settings
from callplane.speech.piper import find_voices

FOLLOW_UP_CALL = "7a1e0c55-3b2d-4e8f-9c10-5d6e7f8a9b02"  # demo external call with one playable leg


def run(database_url: str, *args: str, stdin: str | None = None) -> Result:
    """The CLI in this process (a subprocess costs seconds of start-up per command)."""
    env = {"CALLPLANE_DATABASE_URL": database_url, "CALLPLANE_LOG_LEVEL": "warning"}
    result = CliRunner().invoke(cli, list(args), input=stdin, env=env)
    # Every failure is a clean exit with a message, never an exception escaping the command.
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def ok_json(result: Result) -> dict:
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout
    return json.loads(lines[0])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_on_another_port_prints_a_banner_and_signs_urls_for_that_port(
    database_url: str, tmp_path: Path
) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "CALLPLANE_PUBLIC_URL"}
    env |= {
        "CALLPLANE_DATABASE_URL": database_url,
        "CALLPLANE_LOG_LEVEL": "warning",
        "CALLPLANE_STORAGE_URL": f"file://{tmp_path / 'recordings'}",
    }
    demo = subprocess.run(
        [sys.executable, "-m", "callplane.cli", "demo"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    key = demo.stdout.strip().splitlines()[-1]
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
        line = server.stdout.readline().strip()
        base = f"http://127.0.0.1:{port}"
        assert line.startswith(f"callplane serving {base} ")
        for part in ("database ", "storage file://", "telephony ", f"docs {base}/v1/docs"):
            assert part in line, line
        # A new deployment speaks with Piper's joe voice, where it is installed (make install
        # installs it); espeak-ng otherwise, and the banner says which.
        joe = "piper:en_US-joe-medium"
        if find_voices(None).get("en_US-joe-medium"):
            assert f" · voice {joe} · " in line, line
        else:
            assert f" · voice espeak-ng ({joe} is not installed here) · " in line, line
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline and server.poll() is None, "server did not start"
            time.sleep(0.1)
        headers = {"Authorization": f"Bearer {key}"}
        call = httpx.get(
            f"{base}/v1/external_calls/{FOLLOW_UP_CALL}", headers=headers, timeout=30
        ).json()
        [url] = call["recording_presigned_urls"]
        assert url.startswith(f"{base}/v1/recordings/")
        audio = httpx.get(url, timeout=30)
        assert audio.status_code == 200 and audio.content.startswith(b"RIFF")
        assert httpx.get(f"{base}/v1/docs", timeout=30).status_code == 200
    finally:
        server.terminate()
        server.communicate(timeout=20)


def test_public_url_defaults_to_the_address_served() -> None:
    assert default_public_url("127.0.0.1", 19100) == "http://127.0.0.1:19100"
    assert default_public_url("0.0.0.0", 80) == "http://127.0.0.1:80"
    assert default_public_url("::1", 8000) == "http://[::1]:8000"


def test_banner_never_shows_a_database_password() -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url="postgresql://app:s3cret@db.internal:5432/callplane",
    )
    line = banner(settings, "127.0.0.1", 8000)
    assert "s3cret" not in line and "db.internal:5432/callplane" in line
    assert "\n" not in line


def test_keys_list_shows_every_key_and_never_the_key(database_url: str) -> None:
    org = ok_json(run(database_url, "orgs", "create", "Keys", "--json"))
    other = ok_json(run(database_url, "orgs", "create", "Other", "--json"))
    second = ok_json(
        run(database_url, "keys", "create", "--org", str(org["id"]), "--name", "ci", "--json")
    )
    assert run(database_url, "keys", "revoke", str(org["key_id"])).exit_code == 0

    listed = ok_json(run(database_url, "keys", "list", "--org", str(org["id"]), "--json"))
    assert [k["id"] for k in listed["keys"]] == [org["key_id"], second["id"]]
    assert other["key_id"] not in [k["id"] for k in listed["keys"]]
    first, latest = listed["keys"]
    assert set(first) == {"id", "name", "created_at", "revoked"}
    assert first["revoked"] is True and latest["revoked"] is False
    assert latest["name"] == "ci" and "T" in latest["created_at"]
    assert org["api_key"] not in json.dumps(listed)

    plain = run(database_url, "keys", "list", "--org", str(org["id"]))
    assert plain.exit_code == 0 and "revoked" in plain.stdout and "ci" in plain.stdout
    missing = run(database_url, "keys", "list", "--org", "424242")
    assert (
        missing.exit_code != 0 and missing.stderr.strip() == "error: Organization 424242 not found"
    )


@pytest.mark.parametrize(
    ("args", "stdin", "reason"),
    [
        (["/nonexistent.json"], None, "cannot read /nonexistent.json"),
        (["{tmp}"], None, "Is a directory"),
        (["-"], "{", "not valid JSON"),
        (["-"], '{"nope": []}', "unknown sections: nope"),
        (["-"], '{"voices": [{"languages": ["en"]}]}', "voices[0].name"),
    ],
    ids=["missing-file", "directory", "bad-json", "unknown-section", "invalid-item"],
)
def test_load_failures_are_one_line_and_non_zero(
    database_url: str, tmp_path: Path, args: list[str], stdin: str | None, reason: str
) -> None:
    org = ok_json(run(database_url, "orgs", "create", "L", "--json"))
    args = [a.format(tmp=tmp_path) for a in args]
    result = run(database_url, "load", "--org", str(org["id"]), *args, stdin=stdin)
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and reason in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_load_into_a_missing_organization_or_database_is_one_line(database_url: str) -> None:
    result = run(database_url, "load", "--org", "999", "-", stdin="{}")
    assert result.exit_code == 1 and result.stderr.strip() == "error: Organization 999 not found"
    unreachable = run("postgresql://nobody@127.0.0.1:1/none", "load", "--org", "1", "-", stdin="{}")
    assert unreachable.exit_code == 1 and unreachable.stderr.startswith("error: database: ")
    assert len(unreachable.stderr.strip().splitlines()) == 1


async def test_demo_data_loads_into_any_organization(database_url: str, client) -> None:
    def cli_steps() -> list[dict]:
        assert run(database_url, "demo").exit_code == 0
        orgs = [ok_json(run(database_url, "orgs", "create", n, "--json")) for n in "AB"]
        for org in orgs:
            result = run(database_url, "demo", "--org", str(org["id"]))
            assert result.exit_code == 0, result.stderr
            assert "calls: 4 created" in result.stdout
        again = run(database_url, "demo", "--org", str(orgs[0]["id"]))
        assert again.exit_code == 1 and again.stderr.startswith("error: ")
        return orgs

    # asyncio.run inside the command needs a thread without a running event loop
    for org in await asyncio.to_thread(cli_steps):
        headers = {"Authorization": f"Bearer {org['api_key']}"}
        assert len((await client.get("/v1/voices", headers=headers)).json()) == 3
        calls = (await client.get("/v1/calls", headers=headers)).json()
        assert calls["total_count"] == 4
        # references between the demo's items were kept: tags, and numbers' agents
        assert any(call["tags"] for call in calls["calls"])
        number = "3c2b1a09-8f7e-4d6c-b5a4-938271605f01"
        renamed = await client.patch(
            f"/v1/numbers/{number}", json={"friendly_name": "x"}, headers=headers
        )
        assert renamed.json()["agent"]["name"] == "Riley"


def test_help_texts_point_at_the_readme_not_at_unshipped_documents(database_url: str) -> None:
    for command in (["--help"], ["load", "--help"], ["demo", "--help"], ["keys", "--help"]):
        result = run(database_url, *command)
        assert result.exit_code == 0
        assert "DESIGN" not in result.stdout and "§" not in result.stdout
    assert "README" in run(database_url, "load", "--help").stdout
