"""A newcomer's edges (issue 27): addresses a person types, uploads as generic tools send them,
legs that say why they failed, and durations from the stored timestamps."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any

import httpx
import pytest

from tests.audio import ESPEAK_RATE, wav_bytes
from tests.conftest import client_for
from tests.engine_support import create_call, engine_app, wait_for_call
from tests.factories import make_org

np = pytest.importorskip("numpy")


async def test_the_dashboard_is_found_without_its_slash_and_from_the_root(client) -> None:
    for path in ("/", "/dashboard"):
        response = await client.get(path)
        assert response.status_code == 307, path
        assert response.headers["location"] == "/dashboard/"


async def test_an_unknown_path_is_named_in_its_404(client) -> None:
    response = await client.get("/v2/nothing-here")
    assert response.status_code == 404
    assert "/v2/nothing-here" in response.json()["error"]


def _wav() -> bytes:
    return wav_bytes(np.zeros(ESPEAK_RATE // 4, dtype="<i2"))


async def _external_call(client: httpx.AsyncClient, org: Any) -> str:
    response = await client.post("/v1/external_calls", json={}, headers=org.headers)
    assert response.status_code == 201, response.text
    call_id: str = response.json()["id"]
    return call_id


async def test_uploads_take_raw_octet_stream_and_multipart_audio(app, client) -> None:
    org = await make_org(app)
    call_id = await _external_call(client, org)
    path = f"/v1/external_calls/{call_id}/recordings"
    raw = await client.post(
        path, content=_wav(), headers={**org.headers, "Content-Type": "audio/wav"}
    )
    generic = await client.post(
        path + "?file_name=generic.wav",
        content=_wav(),
        headers={**org.headers, "Content-Type": "application/octet-stream"},
    )
    form = await client.post(
        path,
        files={"file": ("from-a-form.wav", _wav(), "application/octet-stream")},
        data={"note": "a plain field is ignored"},
        headers=org.headers,
    )
    for response in (raw, generic, form):
        assert response.status_code == 201, response.text
    assert generic.json()["file_name"] == "generic.wav"
    assert form.json()["file_name"] == "from-a-form.wav"

    not_audio = await client.post(
        path,
        content=b"<html>not audio</html>",
        headers={**org.headers, "Content-Type": "application/octet-stream"},
    )
    assert not_audio.status_code == 422
    assert "WAV, MP3, Ogg or FLAC" in not_audio.json()["detail"][0]["msg"]
    two = await client.post(
        path,
        files=[("a", ("a.wav", _wav(), "audio/wav")), ("b", ("b.wav", _wav(), "audio/wav"))],
        headers=org.headers,
    )
    assert two.status_code == 422
    assert "one file part" in two.json()["detail"][0]["msg"]
    none = await client.post(path, data={"note": "no file"}, files={}, headers=org.headers)
    assert none.status_code == 422
    listed = (await client.get(f"/v1/external_calls/{call_id}", headers=org.headers)).json()
    assert listed["recording_count"] == 3


async def test_a_missing_speech_model_fails_legs_with_how_to_install(make_app, tmp_path) -> None:
    app = await engine_app(make_app, whisper_model_dir=str(tmp_path / "no-model"))
    org = await make_org(app)
    async with client_for(app) as client:
        call_id = await _external_call(client, org)
        uploaded = await client.post(
            f"/v1/external_calls/{call_id}/recordings",
            content=_wav(),
            headers={**org.headers, "Content-Type": "audio/wav"},
        )
        assert uploaded.status_code == 201
        deadline = time.monotonic() + 20
        while True:
            call = (await client.get(f"/v1/external_calls/{call_id}", headers=org.headers)).json()
            [leg] = call["recordings"]
            if leg["status"] == "error" or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
    assert leg["status"] == "error"
    assert "model.bin" in leg["error"] and "make install" in leg["error"]
    assert call["status"] == "error"


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def test_duration_is_the_stored_length_rounded(make_app) -> None:
    app = await engine_app(make_app, simulated_call_seconds=1.0)
    org = await make_org(app)
    async with client_for(app) as client:
        answered = await create_call(client, org, "+14155550100")
        busy = await create_call(client, org, "+14155550001")
        call = await wait_for_call(client, org, answered)
        never = await wait_for_call(client, org, busy)
    assert call["status"] == "completed"
    length = (_at(call["ended_at"]) - _at(call["started_at"])).total_seconds()
    assert call["duration"] == round(length) == 1
    assert never["duration"] == 0 and never["started_at"] is None
