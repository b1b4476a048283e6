"""POST /voices, DELETE /voices/{uuid} and GET /voices/{uuid}/preview (docs/voices.md): engines that
are installed or not, hostile preview text, a voice an unfinished call still needs, and other
organizations' voices."""

from __future__ import annotations

import io
import struct
import uuid
import wave

import pytest

from tests.conftest import client_for
from tests.factories import load, make_org
from tests.sipp_peer import rms

JOE = "piper:en_US-joe-medium"


def _wav_samples(body: bytes) -> tuple[int, list[int]]:
    with wave.open(io.BytesIO(body)) as wav:
        assert wav.getnchannels() == 1 and wav.getsampwidth() == 2
        frames = wav.readframes(wav.getnframes())
        return wav.getframerate(), list(struct.unpack(f"<{len(frames) // 2}h", frames))


async def _create(client, org, **fields) -> dict:
    response = await client.post(
        "/v1/voices", json={"name": "Joe", "engine": JOE, **fields}, headers=org.headers
    )
    assert response.status_code == 201, response.text
    return response.json()


async def test_create_a_voice_read_it_and_hear_it(app, client):
    org = await make_org(app)
    voice = await _create(
        client, org, languages=["en-US"], description="Warm", tags=["neural"], name=" Joe "
    )
    assert voice["engine"] == JOE and voice["name"] == "Joe"
    assert voice["organization_id"] == org.id and voice["tags"] == ["neural"]
    read = await client.get(f"/v1/voices/{voice['id']}", headers=org.headers)
    assert read.json() == voice

    preview = await client.get(
        f"/v1/voices/{voice['id']}/preview",
        params={"text": "Your table for two is booked."},
        headers=org.headers,
    )
    assert preview.status_code == 200
    assert preview.headers["content-type"] == "audio/wav"
    rate, samples = _wav_samples(preview.content)
    assert rate == 8000 and 1.0 < len(samples) / rate < 5.0
    assert rms(samples) > 1000

    # Without text: a greeting in the voice.
    greeting = await client.get(f"/v1/voices/{voice['id']}/preview", headers=org.headers)
    assert greeting.status_code == 200 and rms(_wav_samples(greeting.content)[1]) > 1000


async def test_a_voice_without_engine_speaks_the_servers_default(app, client, make_app):
    org = await make_org(app)
    voice_id = str(uuid.uuid4())
    await load(app, org, {"voices": [{"id": voice_id, "name": "Old"}]})
    assert (await client.get(f"/v1/voices/{voice_id}", headers=org.headers)).json()[
        "engine"
    ] is None
    preview = await client.get(
        f"/v1/voices/{voice_id}/preview", params={"text": "Hi."}, headers=org.headers
    )
    assert preview.status_code == 200 and rms(_wav_samples(preview.content)[1]) > 500
    # A server whose default voice is not installed previews it as its calls speak: espeak-ng.
    bare = await make_app(voice_engine="piper:en_US-nobody-high")
    async with client_for(bare) as other:
        fallback = await other.get(
            f"/v1/voices/{voice_id}/preview", params={"text": "Hi."}, headers=org.headers
        )
    assert fallback.status_code == 200 and rms(_wav_samples(fallback.content)[1]) > 500


@pytest.mark.parametrize(
    "engine",
    [
        pytest.param("piper:en_US-nobody-high", id="piper-voice-not-installed"),
        pytest.param("espeak-ng:xx-nowhere", id="espeak-voice-not-installed"),
        pytest.param("festival:kal", id="unknown-program"),
        pytest.param("piper:../../etc/passwd", id="path"),
        pytest.param("espeak-ng:en; rm -rf /", id="shell"),
    ],
)
async def test_an_engine_not_installed_here_is_422(app, client, engine):
    org = await make_org(app)
    response = await client.post(
        "/v1/voices", json={"name": "X", "engine": engine}, headers=org.headers
    )
    assert response.status_code == 422
    assert "engine" in response.text
    assert (await client.get("/v1/voices", headers=org.headers)).json() == []  # nothing written


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"name": "X"}, id="no-engine"),
        pytest.param({"engine": JOE}, id="no-name"),
        pytest.param({"name": "", "engine": JOE}, id="empty-name"),
        pytest.param({"name": "X", "engine": JOE, "tags": "calm"}, id="tags-not-a-list"),
        pytest.param({"name": "X", "engine": JOE, "languages": ["x" * 100]}, id="long-language"),
        pytest.param({"name": "X", "engine": "e" * 10_000}, id="huge-engine"),
        pytest.param({"name": "X", "engine": JOE, "id": str(uuid.uuid4())}, id="own-id"),
        pytest.param({"name": "X", "engine": JOE, "organization_id": 1}, id="other-org"),
    ],
)
async def test_bad_voice_bodies_are_422_detail(app, client, body):
    org = await make_org(app)
    response = await client.post("/v1/voices", json=body, headers=org.headers)
    assert response.status_code == 422
    assert set(response.json()) == {"detail"}
    assert (await client.get("/v1/voices", headers=org.headers)).json() == []


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("word " * 2000, id="10000-characters"),
        pytest.param("x" * 501, id="501-characters"),
        pytest.param("\x00\x01\x1b[31m" * 50, id="control-characters"),
        pytest.param("hello\x07world", id="a-bell"),
        pytest.param("...!?", id="nothing-to-say"),
        pytest.param("", id="empty"),
    ],
)
async def test_hostile_preview_text_is_422(app, client, text):
    org = await make_org(app)
    voice = await _create(client, org)
    response = await client.get(
        f"/v1/voices/{voice['id']}/preview", params={"text": text}, headers=org.headers
    )
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/json"


async def test_a_preview_of_500_characters_is_spoken(app, client):
    org = await make_org(app)
    voice = await _create(client, org, engine="espeak-ng:en-us")
    text = ("One more thing. " * 40)[:500]
    response = await client.get(
        f"/v1/voices/{voice['id']}/preview", params={"text": text}, headers=org.headers
    )
    assert response.status_code == 200
    assert rms(_wav_samples(response.content)[1]) > 1000


async def test_delete_a_voice_and_what_a_call_still_needs(app, client):
    org = await make_org(app)
    voice = await _create(client, org)
    queued, done = str(uuid.uuid4()), str(uuid.uuid4())
    await load(
        app,
        org,
        {
            "calls": [
                {"id": queued, "status": "enqueued", "voice_id": voice["id"]},
                {"id": done, "status": "completed", "voice_id": voice["id"]},
            ]
        },
    )
    blocked = await client.delete(f"/v1/voices/{voice['id']}", headers=org.headers)
    assert blocked.status_code == 409
    assert blocked.json() == {"error": "Voice is used by a call that has not finished"}
    assert (await client.get(f"/v1/voices/{voice['id']}", headers=org.headers)).status_code == 200

    cancelled = await client.post(f"/v1/calls/{queued}/cancel", headers=org.headers)
    assert cancelled.status_code == 200, cancelled.text
    deleted = await client.delete(f"/v1/voices/{voice['id']}", headers=org.headers)
    assert deleted.status_code == 200 and deleted.json() == {"success": True}
    gone = await client.get(f"/v1/voices/{voice['id']}", headers=org.headers)
    assert gone.status_code == 404
    again = await client.delete(f"/v1/voices/{voice['id']}", headers=org.headers)
    assert again.status_code == 404 and again.json() == {"error": "Voice not found"}


async def test_a_voice_an_agents_branch_head_speaks_with_cannot_be_deleted(app, client):
    org = await make_org(app)
    voice = await _create(client, org)
    made = await client.post(
        "/v1/agents",
        headers=org.headers,
        json={"name": "Riley", "config": {"prompt": "Hi.", "voice_id": voice["id"]}},
    )
    assert made.status_code == 201, made.text
    agent = made.json()["agent"]
    blocked = await client.delete(f"/v1/voices/{voice['id']}", headers=org.headers)
    assert blocked.status_code == 409
    assert blocked.json() == {"error": "Voice is used by an agent's branch head"}
    # A head that moves to a config without the voice lets it go.
    changed = await client.post(
        f"/v1/agents/{agent['id']}/commits",
        headers=org.headers,
        json={"changes": {"voice_id": None}, "message": "default voice"},
    )
    assert changed.status_code == 201, changed.text
    deleted = await client.delete(f"/v1/voices/{voice['id']}", headers=org.headers)
    assert deleted.status_code == 200, deleted.text


async def test_other_organizations_voices_cannot_be_heard_or_deleted(app, client):
    mine = await make_org(app, "mine")
    theirs = await make_org(app, "theirs")
    voice = await _create(client, theirs)
    for response in (
        await client.get(f"/v1/voices/{voice['id']}/preview", headers=mine.headers),
        await client.delete(f"/v1/voices/{voice['id']}", headers=mine.headers),
    ):
        assert response.status_code == 404
        assert response.json() == {"error": "Voice not found"}
    assert (
        await client.get(f"/v1/voices/{voice['id']}", headers=theirs.headers)
    ).status_code == 200


async def test_a_fixture_document_may_name_engines(app, client):
    from callplane.loader import LoadError

    org = await make_org(app)
    voice_id = str(uuid.uuid4())
    # Its form is checked, not that it is installed: a document may come from another server.
    await load(app, org, {"voices": [{"id": voice_id, "name": "Far", "engine": "piper:xx-far"}]})
    read = await client.get(f"/v1/voices/{voice_id}", headers=org.headers)
    assert read.json()["engine"] == "piper:xx-far"
    unheard = await client.get(f"/v1/voices/{voice_id}/preview", headers=org.headers)
    assert unheard.status_code == 409 and "not installed" in unheard.json()["error"]
    with pytest.raises(LoadError, match=r"voices\[0\]"):
        await load(app, org, {"voices": [{"name": "Bad", "engine": "festival:kal"}]})
