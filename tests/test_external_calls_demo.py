"""The demo data of external calls loads and behaves as the README's tour describes."""

from __future__ import annotations

import base64
from importlib.resources import files

import orjson

from callplane.speech.decoding import decode, is_silent
from tests.factories import load, make_org

BILLING = "7a1e0c55-3b2d-4e8f-9c10-5d6e7f8a9b01"
FOLLOW_UP = "7a1e0c55-3b2d-4e8f-9c10-5d6e7f8a9b02"


async def test_demo_external_calls(app, client):
    document = orjson.loads((files("callplane.demo") / "external_calls.json").read_bytes())
    assert set(document) == {"external_calls"}
    org = await make_org(app)
    created = await load(app, org, document)
    assert created["external_calls"] == [BILLING, FOLLOW_UP]

    listed = (await client.get("/v1/external_calls", headers=org.headers)).json()
    assert [c["id"] for c in listed["external_calls"]] == [FOLLOW_UP, BILLING]

    billing = (await client.get(f"/v1/external_calls/{BILLING}", headers=org.headers)).json()
    assert billing["recording_count"] == 3
    assert [r["status"] for r in billing["recordings"]] == ["transcribed", "pending", "transcribed"]
    assert billing["recordings"][0]["transcript"][0]["speaker"] == "caller"
    # The third leg awaits redaction: listed, but not playable.
    assert len(billing["recording_presigned_urls"]) == 2

    follow_up = (await client.get(f"/v1/external_calls/{FOLLOW_UP}", headers=org.headers)).json()
    assert follow_up["recording_count"] == 1  # the deleted take is invisible
    [url] = follow_up["recording_presigned_urls"]
    audio = await client.get(url.removeprefix("http://127.0.0.1:8000"))
    assert audio.status_code == 200
    assert audio.content.startswith(b"RIFF") and audio.headers["content-type"] == "audio/wav"
    assert follow_up["recordings"][0]["created_at"] == "2025-05-13T09:32:00Z"


def test_demo_legs_left_to_the_worker_hold_speech(tmp_path):
    """`make run` starts a worker that transcribes the pending and processing legs while the
    user watches: they must hold speech, or the tour shows them turning to `error`."""
    document = orjson.loads((files("callplane.demo") / "external_calls.json").read_bytes())
    to_process = [
        leg
        for call in document["external_calls"]
        for leg in call["recordings"]
        if leg["status"] in {"pending", "processing"} and not leg.get("deleted")
    ]
    assert len(to_process) == 2
    for leg in to_process:
        path = tmp_path / leg["file_name"]
        path.write_bytes(base64.b64decode(leg["audio_base64"]))
        audio = decode(path, "wav", max_seconds=60)
        assert audio.duration > 2
        assert not is_silent(audio.channels[0])
