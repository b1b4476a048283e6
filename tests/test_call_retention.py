"""Call retention (docs/privacy.md): an agent's ``retention_days`` after a call ended, its
recording and transcript text are deleted (the call stays), once, audited;
``store_recordings: false`` keeps no audio at all."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from datetime import timedelta

import pytest

from callplane.kit.tenancy import select_owned, update_owned
from callplane.media.storage import StorageError
from callplane.models.base import utcnow
from callplane.models.calls import Call
from tests.agents_support import create_agent, head
from tests.conftest import client_for
from tests.engine_support import TERMINAL, agent_engine, create_call, engine_app, wait_for_call
from tests.factories import load, make_org, runtime_of
from tests.test_cli import ok_json


def run(app, database_url: str, *args: str) -> subprocess.CompletedProcess:
    """``callplane retention run ...`` with the app's database and recording storage."""
    storage = f"file://{runtime_of(app).storage.root}"
    env = {
        **os.environ,
        "CALLPLANE_DATABASE_URL": database_url,
        "CALLPLANE_STORAGE_URL": storage,
        "CALLPLANE_LOG_LEVEL": "warning",
    }
    return subprocess.run(
        [sys.executable, "-m", "callplane.cli", "retention", "run", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


TRANSCRIPT = [{"role": "user", "text": "my card is 4111 1111 1111 1111"}]


async def _call(app, org, agent_commit: str | None, ended_days_ago: int) -> str:
    call_id = str(uuid.uuid4())
    await load(
        app,
        org,
        {
            "calls": [{"id": call_id, "status": "completed", "transcripts": TRANSCRIPT}],
            "call_recordings": [{"call_id": call_id, "audio_base64": "UklGRgAA"}],
        },
    )
    async with runtime_of(app).db.session(write=True) as session:
        await session.execute(
            update_owned(Call, org.id)
            .where(Call.id == uuid.UUID(call_id))
            .values(
                agent_commit_id=agent_commit,
                ended_at=utcnow() - timedelta(days=ended_days_ago),
                summary="The caller read out a card number.",
            )
        )
        await session.commit()
    return call_id


async def _row(app, org, call_id: str) -> Call:
    async with runtime_of(app).db.session(write=False) as session:
        call = await session.scalar(select_owned(Call, org.id).where(Call.id == uuid.UUID(call_id)))
        assert call is not None
        return call


async def test_expired_calls_lose_recording_and_transcript_once(app, client, database_url):
    org = await make_org(app)
    kept = await create_agent(client, org, {"prompt": "Keep everything."})
    short = await create_agent(client, org, {"prompt": "Forget soon.", "retention_days": 30})
    old = await _call(app, org, head(short), ended_days_ago=40)
    young = await _call(app, org, head(short), ended_days_ago=10)
    forever = await _call(app, org, head(kept), ended_days_ago=400)
    before = (await client.get(f"/v1/calls/{old}", headers=org.headers)).json()["call"]
    assert before["recording_presigned_url"] and before["transcripts"]
    [recording_key] = [r.storage_key for r in await _recordings(app, org, old)]

    assert ok_json(run(app, database_url, "--json")) == {"calls": 1}
    after = (await client.get(f"/v1/calls/{old}", headers=org.headers)).json()["call"]
    assert after["status"] == "completed"  # the call itself stays
    assert after["recording_presigned_url"] is None
    assert after["transcripts"] == [] and after["summary"] is None
    assert after["transcript_deleted_at"] is not None and before["transcript_deleted_at"] is None
    assert (await _row(app, org, old)).transcript_deleted_at is not None
    with pytest.raises(StorageError):
        await runtime_of(app).storage.size(recording_key)
    for untouched in (young, forever):
        call = (await client.get(f"/v1/calls/{untouched}", headers=org.headers)).json()["call"]
        assert call["transcripts"] and call["recording_presigned_url"]

    # Idempotent: nothing left to do, nothing recorded twice.
    assert ok_json(run(app, database_url, "--json")) == {"calls": 0}
    log = (
        await client.get("/v1/audit_log", headers=org.headers, params={"actor": "system"})
    ).json()
    assert [(e["action"], e["resource_id"]) for e in log["events"]] == [("retention.delete", old)]

    # As if it were later: the young call's time has come too.
    later = (utcnow() + timedelta(days=25)).isoformat()
    assert ok_json(run(app, database_url, "--as-of", later, "--json")) == {"calls": 1}
    assert (await _row(app, org, young)).transcript_deleted_at is not None
    bad = run(app, database_url, "--as-of", "next tuesday")
    assert bad.returncode == 1 and "--as-of" in bad.stderr


async def _recordings(app, org, call_id: str):
    from callplane.models.external_calls import Recording

    async with runtime_of(app).db.session(write=False) as session:
        return (
            await session.scalars(
                select_owned(Recording, org.id).where(Recording.call_id == uuid.UUID(call_id))
            )
        ).all()


@pytest.mark.parametrize("days", [0, 3651, "30", 1.5])
async def test_retention_days_is_checked(app, client, days):
    org = await make_org(app)
    response = await client.post(
        "/v1/agents",
        headers=org.headers,
        json={"name": "R", "config": {"prompt": "x", "retention_days": days}},
    )
    assert response.status_code == 422, response.text
    assert "retention_days" in response.json()["error"]


@pytest.mark.parametrize("store", [True, False])
async def test_store_recordings_false_keeps_no_audio(make_app, store):
    app = await engine_app(make_app, worker="off")  # the engine below is the only one
    config = {"first_message": "Hello there.", "store_recordings": store}
    async with agent_engine(app, config):
        org = await make_org(app)
        async with client_for(app) as client:
            call_id = await create_call(client, org, "+14155550100")
            call = await wait_for_call(client, org, call_id, TERMINAL, within=30)
    assert call["status"] == "completed"
    assert bool(call["recording_presigned_url"]) is store
    assert bool(await _recordings(app, org, call_id)) is store
