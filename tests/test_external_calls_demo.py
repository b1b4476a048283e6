"""The demo data of external calls loads and behaves as the README's tour describes."""

from __future__ import annotations

from importlib.resources import files

import orjson

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
