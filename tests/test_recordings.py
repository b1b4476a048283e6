"""Signed recording URLs and GET /v1/recordings/{id}/audio
(docs/api-contract.md#recordings-and-signed-urls): exact bytes without an API key, 403 once expired
or altered, HTTP Range, tenancy; call recordings use the same signer."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from callplane.recordings.urls import call_recording_urls
from tests.conftest import client_for
from tests.factories import OrgHandle, load, make_org, runtime_of
from tests.test_external_calls_data import CALL, LEG_1, LEG_2, external_call, leg, wav

PUBLIC = "http://127.0.0.1:8000"
AUDIO = wav(seconds=0.1) + bytes(range(256))


async def signed_url(app, client, org: OrgHandle, audio: bytes = AUDIO, **leg_extra: Any) -> str:
    legs = [leg(LEG_1, "2025-03-01T10:00:00Z", audio, **leg_extra)]
    await load(app, org, {"external_calls": [external_call(recordings=legs)]})
    response = await client.get(f"/v1/external_calls/{CALL}", headers=org.headers)
    [url] = response.json()["recording_presigned_urls"]
    assert url.startswith(PUBLIC)
    return str(url.removeprefix(PUBLIC))


def with_query(url: str, **changes: str | None) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    for key, value in changes.items():
        if value is None:
            query.pop(key, None)
        else:
            query[key] = value
    return f"{parts.path}?{urlencode(query)}"


def assert_status_error(response, status: int) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["status"] == "error" and body["success"] is False
    assert isinstance(body["error"], str) and body["errors"] == [body["error"]]


async def test_url_downloads_the_exact_bytes_without_an_api_key(app, client):
    org = await make_org(app)
    url = await signed_url(app, client, org)
    query = dict(parse_qsl(urlsplit(url).query))
    assert set(query) == {"expires", "signature"}
    assert urlsplit(url).path == f"/v1/recordings/{LEG_1}/audio"
    response = await client.get(url)
    assert response.status_code == 200
    assert response.content == AUDIO
    assert response.headers["content-type"] == "audio/wav"
    assert response.headers["accept-ranges"] == "bytes"
    assert response.headers["content-length"] == str(len(AUDIO))
    assert "content-range" not in response.headers
    # An API key is not needed, and does not matter.
    with_key = await client.get(url, headers=org.headers)
    assert with_key.content == AUDIO


async def test_url_expires_after_one_hour(app, client):
    org = await make_org(app)
    runtime = runtime_of(app)
    now = 1_750_000_000.0
    runtime.signer.clock = lambda: now
    url = await signed_url(app, client, org)
    assert dict(parse_qsl(urlsplit(url).query))["expires"] == str(int(now) + 3600)

    runtime.signer.clock = lambda: now + 3599
    assert (await client.get(url)).status_code == 200
    runtime.signer.clock = lambda: now + 3600
    assert_status_error(await client.get(url), 403)
    runtime.signer.clock = lambda: now + 10 * 86400
    assert_status_error(await client.get(url), 403)


async def test_content_type_is_the_stored_one(app, client):
    org = await make_org(app)
    url = await signed_url(app, client, org, audio=b"ID3fake-mp3", content_type="audio/mpeg")
    response = await client.get(url)
    assert response.headers["content-type"] == "audio/mpeg"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.content == b"ID3fake-mp3"


@pytest.mark.parametrize(
    "alter",
    [
        lambda u: with_query(
            u, expires=str(int(dict(parse_qsl(urlsplit(u).query))["expires"]) + 1)
        ),
        lambda u: with_query(u, expires="0" + dict(parse_qsl(urlsplit(u).query))["expires"]),
        lambda u: with_query(u, expires="9" * 12),
        lambda u: with_query(u, expires="-5"),
        lambda u: with_query(u, expires="1e12"),
        lambda u: with_query(u, signature="A" * 43),
        lambda u: with_query(
            u, signature=dict(parse_qsl(urlsplit(u).query))["signature"][:-1] + "x"
        ),
        lambda u: with_query(u, signature=dict(parse_qsl(urlsplit(u).query))["signature"] + "A"),
        lambda u: with_query(u, signature=None),
        lambda u: with_query(u, expires=None),
        lambda u: urlsplit(u).path,
        lambda u: with_query(u, extra="1"),
        lambda u: u + "&signature=" + dict(parse_qsl(urlsplit(u).query))["signature"],
        lambda u: u.replace(LEG_1, LEG_2),
        lambda u: u.replace(LEG_1, LEG_1.upper()),
        lambda u: u.replace(LEG_1, LEG_1.replace("-", "")),
        lambda u: u.replace(LEG_1, "' OR 1=1 --"),
        lambda u: u.replace(LEG_1, "é" * 36),
    ],
    ids=[
        "expiry+1",
        "expiry-leading-zero",
        "expiry-far-future",
        "expiry-negative",
        "expiry-float",
        "signature-forged",
        "signature-last-char",
        "signature-longer",
        "signature-missing",
        "expiry-missing",
        "no-query",
        "extra-parameter",
        "repeated-parameter",
        "other-recording",
        "id-upper-case",
        "id-without-dashes",
        "id-injection",
        "id-unicode",
    ],
)
async def test_any_altered_url_is_403(app, client, alter):
    org = await make_org(app)
    url = await signed_url(app, client, org)
    # A second, real recording: pointing the URL at it must not work either.
    await load(
        app,
        org,
        {
            "external_calls": [
                external_call(
                    str(uuid.uuid4()), recordings=[leg(LEG_2, "2025-03-01T10:00:00Z", b"other")]
                )
            ]
        },
    )
    assert (await client.get(url)).status_code == 200
    assert_status_error(await client.get(alter(url)), 403)


async def test_url_of_one_organization_never_serves_anothers_recording_with_the_same_id(
    app, client
):
    first = await make_org(app, "First")
    second = await make_org(app, "Second")
    first_url = await signed_url(app, client, first, audio=b"first audio")
    second_url = await signed_url(app, client, second, audio=b"second audio")
    assert first_url != second_url
    assert (await client.get(first_url)).content == b"first audio"
    assert (await client.get(second_url)).content == b"second audio"


async def test_recording_made_unplayable_after_signing_is_404(app, client):
    from sqlalchemy import update

    from callplane.models.external_calls import Recording

    org = await make_org(app)
    url = await signed_url(app, client, org)
    async with runtime_of(app).db.session(write=True) as session:
        await session.execute(update(Recording).values(deleted=True))
        await session.commit()
    assert_status_error(await client.get(url), 404)


async def test_audio_gone_from_storage_is_404(app, client):
    org = await make_org(app)
    url = await signed_url(app, client, org)
    await runtime_of(app).storage.delete(f"{org.id}/{LEG_1}")
    assert_status_error(await client.get(url), 404)


@pytest.mark.parametrize(
    ("header", "start", "end"),
    [
        ("bytes=0-9", 0, 9),
        ("bytes=10-", 10, len(AUDIO) - 1),
        ("bytes=-5", len(AUDIO) - 5, len(AUDIO) - 1),
        ("bytes=100-99999999", 100, len(AUDIO) - 1),
        ("bytes=-99999999", 0, len(AUDIO) - 1),
        (f"bytes={len(AUDIO) - 1}-{len(AUDIO) - 1}", len(AUDIO) - 1, len(AUDIO) - 1),
    ],
)
async def test_range_requests_answer_206(app, client, header, start, end):
    org = await make_org(app)
    url = await signed_url(app, client, org)
    response = await client.get(url, headers={"Range": header})
    assert response.status_code == 206
    assert response.content == AUDIO[start : end + 1]
    assert response.headers["content-range"] == f"bytes {start}-{end}/{len(AUDIO)}"
    assert response.headers["content-length"] == str(end - start + 1)
    assert response.headers["content-type"] == "audio/wav"


@pytest.mark.parametrize(
    "header", [f"bytes={len(AUDIO)}-", f"bytes={len(AUDIO) + 5}-{len(AUDIO) + 9}", "bytes=-0"]
)
async def test_unsatisfiable_range_is_416(app, client, header):
    org = await make_org(app)
    url = await signed_url(app, client, org)
    response = await client.get(url, headers={"Range": header})
    assert_status_error(response, 416)
    assert response.headers["content-range"] == f"bytes */{len(AUDIO)}"


@pytest.mark.parametrize(
    "header",
    ["bytes=0-1,5-6", "items=0-5", "bytes=5-2", "bytes=abc", "bytes=-", "bytes=" + "9" * 40],
)
async def test_ignored_range_headers_send_everything(app, client, header):
    org = await make_org(app)
    url = await signed_url(app, client, org)
    response = await client.get(url, headers={"Range": header})
    assert response.status_code == 200
    assert response.content == AUDIO


async def test_head_gives_headers_without_body(app, client):
    org = await make_org(app)
    url = await signed_url(app, client, org)
    response = await client.head(url)
    assert response.status_code == 200
    assert response.content == b""
    assert response.headers["content-length"] == str(len(AUDIO))
    assert response.headers["accept-ranges"] == "bytes"
    partial = await client.head(url, headers={"Range": "bytes=0-3"})
    assert partial.status_code == 206
    assert partial.headers["content-range"] == f"bytes 0-3/{len(AUDIO)}"


async def test_empty_recording(app, client):
    org = await make_org(app)
    url = await signed_url(app, client, org, audio=b"")
    response = await client.get(url)
    assert response.status_code == 200 and response.content == b""
    assert_status_error(await client.get(url, headers={"Range": "bytes=0-"}), 416)


async def test_urls_use_the_public_url(make_app):
    app = await make_app(public_url="https://calls.example.com/")
    from tests.conftest import client_for

    org = await make_org(app)
    async with client_for(app) as client:
        await load(
            app,
            org,
            {
                "external_calls": [
                    external_call(recordings=[leg(LEG_1, "2025-03-01T10:00:00Z", AUDIO)])
                ]
            },
        )
        body = (await client.get(f"/v1/external_calls/{CALL}", headers=org.headers)).json()
        [url] = body["recording_presigned_urls"]
        assert url.startswith(f"https://calls.example.com/v1/recordings/{LEG_1}/audio?expires=")
        response = await client.get(url.removeprefix("https://calls.example.com"))
        assert response.content == AUDIO


async def test_generated_signing_key_is_shared_by_every_process(make_app, tmp_path):
    """Without CALLPLANE_SIGNING_KEY the key is generated once and stored: a URL signed by one
    process is accepted by another, and a different key refuses it."""
    from tests.conftest import client_for

    storage = f"file://{tmp_path / 'shared'}"
    first = await make_app(signing_key="", storage_url=storage)
    second = await make_app(signing_key="", storage_url=storage)
    other_key = await make_app(signing_key="another-key", storage_url=storage)
    org = await make_org(first)
    async with client_for(first) as c1, client_for(second) as c2, client_for(other_key) as c3:
        url = await signed_url(first, c1, org)
        assert (await c2.get(url)).content == AUDIO
        assert_status_error(await c3.get(url), 403)


async def test_call_recording_urls_one_query_for_many_calls(app, client):
    org = await make_org(app)
    other = await make_org(app, "Other")
    with_audio, hidden, without = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    calls = [{"id": str(c), "status": "completed"} for c in (with_audio, hidden, without)]
    await load(app, org, {"calls": calls})
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    await load(
        app,
        org,
        {
            "call_recordings": [
                {
                    "id": second,
                    "call_id": str(with_audio),
                    "audio_base64": "c2Vjb25k",
                    "started_at": "2025-01-01T00:01:00Z",
                },
                {
                    "id": first,
                    "call_id": str(with_audio),
                    "audio_base64": "Zmlyc3Q=",
                    "started_at": "2025-01-01T00:00:00Z",
                    "content_type": "audio/mpeg",
                },
                {"call_id": str(hidden)},  # no audio
            ]
        },
    )
    runtime = runtime_of(app)
    async with runtime.db.session(write=False) as session:
        urls = await call_recording_urls(session, runtime, org.id, [with_audio, hidden, without])
        assert await call_recording_urls(session, runtime, org.id, []) == {}
        # Another organization never gets this organization's recordings.
        assert await call_recording_urls(session, runtime, other.id, [with_audio]) == {}
    assert set(urls) == {with_audio}
    url = urls[with_audio]
    assert url.startswith(f"{PUBLIC}/v1/recordings/{first}/audio?")
    response = await client.get(url.removeprefix(PUBLIC))
    assert response.content == b"first"
    assert response.headers["content-type"] == "audio/mpeg"


async def test_call_recordings_need_an_existing_call(app):
    from callplane.loader import LoadError

    org = await make_org(app)
    with pytest.raises(LoadError, match=r"call_recordings\[0\]\.call_id"):
        await load(
            app, org, {"call_recordings": [{"call_id": str(uuid.uuid4()), "audio_base64": "eA=="}]}
        )


async def test_call_resource_carries_its_recording_url(app, client):
    """GET /v1/calls/{uuid} signs its recording with the same signer
    (docs/api-contract.md#recordings-and-signed-urls)."""
    org = await make_org(app)
    other = await make_org(app, "Other")
    call_id, bare_id = str(uuid.uuid4()), str(uuid.uuid4())
    await load(
        app,
        org,
        {
            "calls": [{"id": call_id, "status": "completed"}, {"id": bare_id}],
            "call_recordings": [
                {"call_id": call_id, "file_name": "call.wav", "audio_base64": "UklGRgAA"}
            ],
        },
    )
    body = (await client.get(f"/v1/calls/{call_id}", headers=org.headers)).json()
    url = body["call"]["recording_presigned_url"]
    assert url.startswith(f"{PUBLIC}/v1/recordings/")
    response = await client.get(url.removeprefix(PUBLIC))
    assert response.status_code == 200 and response.content == b"RIFF\x00\x00"
    bare = (await client.get(f"/v1/calls/{bare_id}", headers=org.headers)).json()
    assert bare["call"]["recording_presigned_url"] is None
    # The call (and so its recording) of another organization stays invisible.
    assert (await client.get(f"/v1/calls/{call_id}", headers=other.headers)).status_code == 404


async def test_openapi_describes_the_routes(client):
    # Also fails on a duplicate operation id (warnings are errors in this suite).
    paths = (await client.get("/v1/openapi.json")).json()["paths"]
    audio = paths["/v1/recordings/{recording_id}/audio"]["get"]
    assert {"200", "206", "403", "404", "416"} <= set(audio["responses"])
    assert "/v1/external_calls/{uuid}" in paths and "/v1/external_calls" in paths


async def test_refused_urls_are_rate_limited_per_address(make_app):
    app = await make_app(auth_failure_limit="3/minute")
    bad = "/v1/recordings/5f0c4a9e-1b2d-4c3e-8f4a-0b1c2d3e4f50/audio?expires=9999999999&signature=x"
    async with client_for(app) as c:
        statuses = [(await c.get(bad)).status_code for _ in range(4)]
    assert statuses == [403, 403, 403, 429]


@pytest.mark.parametrize("secret", [b"k" * 43, b"", b"s" * 64, b"long" * 40], ids=len)
def test_url_signature_is_hmac_sha256_of_organization_id_and_expiry(secret: bytes) -> None:
    """The signer runs HMAC on its own keyed hash states (``RecordingSigner._mac``): the same
    MAC as the standard library's, for keys shorter, as long as and longer than a block."""
    import base64
    import hashlib
    import hmac

    from callplane.media.signing import RecordingSigner
    from callplane.media.storage import LocalStorage
    from callplane.settings import Settings

    settings = Settings(_env_file=None, public_url=PUBLIC)  # type: ignore[call-arg]
    signer = RecordingSigner(settings, clock=lambda: 1_000_000.0)
    for organization_id, recording_id in ((7, LEG_1), (12, LEG_2)):
        url = signer.url(
            LocalStorage(Path("/nonexistent")),
            secret,
            organization_id,
            recording_id,
            "k",
            "audio/wav",
        )
        query = dict(parse_qsl(urlsplit(url).query))
        message = f"v1\n{organization_id}\n{recording_id}\n{query['expires']}".encode()
        expected = hmac.new(secret, message, hashlib.sha256).digest()
        assert query["signature"] == base64.urlsafe_b64encode(expected).rstrip(b"=").decode()
        assert signer.matches(
            secret, organization_id, recording_id, query["expires"], query["signature"]
        )
