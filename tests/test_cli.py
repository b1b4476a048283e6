"""The CLI contract (README.md#command-line): exact --json outputs, keys that work, revocation,
load, demo."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from callplane.kit.db import Database
from callplane.migrate import drift
from tests.conftest import client_for


def callplane(
    database_url: str, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess:
    env = {**os.environ, "CALLPLANE_DATABASE_URL": database_url, "CALLPLANE_LOG_LEVEL": "warning"}
    return subprocess.run(
        [sys.executable, "-m", "callplane.cli", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def ok_json(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout
    return json.loads(lines[0])


async def test_orgs_keys_and_revocation(app, database_url):
    org = ok_json(callplane(database_url, "orgs", "create", "Acme ☎", "--json"))
    assert set(org) == {"id", "name", "api_key", "key_id"}
    assert isinstance(org["key_id"], int)
    assert org["name"] == "Acme ☎" and isinstance(org["id"], int)
    assert org["api_key"].startswith("cp_")

    key = ok_json(callplane(database_url, "keys", "create", "--org", str(org["id"]), "--json"))
    assert set(key) == {"id", "api_key"} and isinstance(key["id"], int)
    async with client_for(app) as c:
        for api_key in (org["api_key"], key["api_key"]):
            r = await c.get("/v1/voices", headers={"Authorization": f"Bearer {api_key}"})
            assert r.status_code == 200

    revoked = callplane(database_url, "keys", "revoke", str(key["id"]))
    assert revoked.returncode == 0, revoked.stderr
    app.state.runtime.key_cache._entries.clear()  # the 1 s cache window, elapsed
    async with client_for(app) as c:
        r = await c.get("/v1/voices", headers={"Authorization": f"Bearer {key['api_key']}"})
        assert r.status_code == 401
        r = await c.get("/v1/voices", headers={"Authorization": f"Bearer {org['api_key']}"})
        assert r.status_code == 200


async def test_keys_for_unknown_org_and_unknown_key_fail(database_url):
    assert callplane(database_url, "keys", "create", "--org", "999", "--json").returncode != 0
    assert callplane(database_url, "keys", "revoke", "999").returncode != 0


async def test_load_prints_ids_and_is_all_or_nothing(app, database_url):
    org = ok_json(callplane(database_url, "orgs", "create", "Loader", "--json"))
    doc = {"agents": [{"name": "A"}], "voices": [{"name": "V", "languages": ["en"]}]}
    created = ok_json(
        callplane(
            database_url, "load", "--org", str(org["id"]), "-", "--json", stdin=json.dumps(doc)
        )
    )
    assert list(created) == ["agents", "voices"]
    assert len(created["agents"]) == 1 and len(created["voices"]) == 1

    bad = {"voices": [{"name": "W"}], "phone_numbers": [{"number": "+1", "agent_id": 424242}]}
    failed = callplane(database_url, "load", "--org", str(org["id"]), "-", stdin=json.dumps(bad))
    assert failed.returncode != 0 and "agent_id" in failed.stderr
    async with client_for(app) as c:
        r = await c.get("/v1/voices", headers={"Authorization": f"Bearer {org['api_key']}"})
    assert [v["name"] for v in r.json()] == ["V"]


def _history(calls: int) -> dict:
    """An imported history large enough that a worker process prepares its chunks."""
    return {
        "calls": [
            {
                "created_at": f"2025-01-01T00:00:{n % 60:02d}Z",
                "params": {"order": f"A-{n}", "attempt": n % 3},
                "external_identifiers": {"crm": f"c{n}"},
            }
            for n in range(calls)
        ]
    }


async def test_load_of_a_large_history_is_whole_and_searchable(app, database_url):
    """Prepared by a worker process; on SQLite the indexes are built after the rows."""
    from callplane.calls.fixtures import CHUNK, IN_WORKER_FROM
    from callplane.kit.bulk import INDEXES_AFTER_FROM

    calls = max(CHUNK * IN_WORKER_FROM, INDEXES_AFTER_FROM) + 1
    org = ok_json(callplane(database_url, "orgs", "create", "History", "--json"))
    bad = _history(calls)
    bad["calls"][-1]["status"] = "lost"
    failed = callplane(database_url, "load", "--org", str(org["id"]), "-", stdin=json.dumps(bad))
    assert failed.returncode != 0 and f"calls[{calls - 1}].status" in failed.stderr

    created = ok_json(
        callplane(
            database_url,
            "load",
            "--org",
            str(org["id"]),
            "-",
            "--json",
            stdin=json.dumps(_history(calls)),
        )
    )
    assert len(created["calls"]) == calls == len(set(created["calls"]))
    headers = {"Authorization": f"Bearer {org['api_key']}"}
    async with client_for(app) as c:
        for n in (0, CHUNK, calls - 1):
            r = await c.get(
                "/v1/calls/find_by_attribute",
                params={"param_key": "order", "param_value": f"A-{n}"},
                headers=headers,
            )
            assert r.status_code == 200, r.text
            assert r.json()["call"]["id"] == created["calls"][n]
    db = Database(database_url, pool_size=1)
    try:
        assert await drift(db) == []  # every index and key made again, as migrated
    finally:
        await db.dispose()


@pytest.mark.parametrize("content", ["{not json", "[]"])
async def test_load_rejects_malformed_documents(database_url, content):
    org = ok_json(callplane(database_url, "orgs", "create", "X", "--json"))
    result = callplane(database_url, "load", "--org", str(org["id"]), "-", stdin=content)
    assert result.returncode != 0 and result.stderr.startswith("error:")


async def test_demo_is_idempotent_and_its_key_works(app, database_url):
    first = callplane(database_url, "demo")
    second = callplane(database_url, "demo")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    key = first.stdout.strip().splitlines()[-1]
    assert key == second.stdout.strip().splitlines()[-1]
    async with client_for(app) as c:
        voices = await c.get("/v1/voices", headers={"Authorization": f"Bearer {key}"})
    assert voices.status_code == 200
    assert len(voices.json()) == 3  # loaded once, not twice
