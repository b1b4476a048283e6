"""GET /v1/external_calls/{uuid} and GET /v1/external_calls (SPEC; docs/api-contract.md)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from callplane.errors import CallplaneError
from callplane.media.storage import LocalStorage, StorageError
from tests.factories import OrgHandle, load, make_org, runtime_of
from tests.paging import OUT_OF_RANGE_PAGING
from tests.test_external_calls_data import (
    CALL,
    LEG_1,
    LEG_2,
    LEG_3,
    LEG_4,
    LEG_5,
    LEG_6,
    SOURCE,
    TRANSCRIPT,
    external_call,
    leg,
    wav,
)


async def get_call(client, org: OrgHandle, call_id: str = CALL) -> dict[str, Any]:
    response = await client.get(f"/v1/external_calls/{call_id}", headers=org.headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def url_leg_ids(body: dict[str, Any]) -> list[str]:
    """The recording id each URL names (local storage URLs carry it in the path)."""
    return [
        url.split("/v1/recordings/")[1].split("/")[0] for url in body["recording_presigned_urls"]
    ]


async def test_external_call_shape_and_chronological_legs(app, client):
    org = await make_org(app)
    legs = [
        # Loaded out of order: the response orders by started_at, then id.
        leg(LEG_3, "2025-03-01T10:02:00Z", wav(), status="pending"),
        leg(LEG_1, "2025-03-01T10:00:00Z", wav(), transcript=TRANSCRIPT, summary="Greeting"),
        leg(LEG_2, "2025-03-01T10:01:00Z", wav(), status="transcribed", transcript=[]),
    ]
    await load(app, org, {"external_calls": [external_call(recordings=legs)]})
    body = await get_call(client, org)
    assert set(body) == {
        "id",
        "external_call_id",
        "title",
        "direction",
        "from_number",
        "to_number",
        "duration_seconds",
        "started_at",
        "status",
        "recording_count",
        "source",
        "created_at",
        "updated_at",
        "recording_presigned_urls",
        "recordings",
    }
    assert body["id"] == CALL
    assert body["external_call_id"] == "ext-42"
    assert body["direction"] == "outbound"
    assert body["status"] == "transcribed"
    assert body["duration_seconds"] == 95
    assert body["started_at"] == "2025-03-01T10:00:00Z"
    assert body["created_at"] == "2025-03-01T10:05:00Z"
    assert body["source"] == {"id": SOURCE, "name": "Zoom import", "provider": "zoom"}
    assert body["recording_count"] == 3
    assert [r["id"] for r in body["recordings"]] == [LEG_1, LEG_2, LEG_3]
    first = body["recordings"][0]
    assert set(first) == {
        "id",
        "file_name",
        "status",
        "started_at",
        "transcript",
        "summary",
        "created_at",
        "updated_at",
        "error",  # an extension: why a leg failed
    }
    assert first["status"] == "transcribed"
    assert first["transcript"] == TRANSCRIPT
    assert first["summary"] == "Greeting"
    assert first["file_name"] == "a1.wav"
    assert body["recordings"][1]["transcript"] == []
    # Not processed yet: transcript and summary are null (SPEC rule 1).
    pending = body["recordings"][2]
    assert pending["status"] == "pending"
    assert pending["transcript"] is None and pending["summary"] is None
    # One URL per playable leg, chronological, each expiring in one hour.
    assert url_leg_ids(body) == [LEG_1, LEG_2, LEG_3]
    for url in body["recording_presigned_urls"]:
        assert url.startswith("http://127.0.0.1:8000/v1/recordings/")
        assert "expires=" in url and "signature=" in url


async def test_transcript_is_hidden_until_the_leg_is_transcribed(app, client):
    org = await make_org(app)
    legs = [
        leg(LEG_1, "2025-03-01T10:00:00Z", status="processing", transcript=TRANSCRIPT, summary="x"),
        leg(LEG_2, "2025-03-01T10:01:00Z", status="error", transcript=TRANSCRIPT, summary="y"),
        leg(LEG_3, "2025-03-01T10:02:00Z"),
    ]
    await load(app, org, {"external_calls": [external_call(recordings=legs)]})
    body = await get_call(client, org)
    assert [(r["status"], r["transcript"], r["summary"]) for r in body["recordings"]] == [
        ("processing", None, None),
        ("error", None, None),
        ("pending", None, None),
    ]


async def test_hidden_and_unplayable_legs(app, client):
    org = await make_org(app)
    legs = [
        leg(LEG_1, "2025-03-01T10:00:00Z", wav()),
        leg(LEG_2, "2025-03-01T10:01:00Z", wav(), deleted=True),
        leg(LEG_3, "2025-03-01T10:02:00Z", wav(), excluded=True),
        leg(LEG_4, "2025-03-01T10:03:00Z", wav(), awaiting_redaction=True),
        leg(LEG_5, "2025-03-01T10:04:00Z"),  # no audio
        leg(LEG_6, "2025-03-01T10:05:00Z", wav()),
    ]
    await load(app, org, {"external_calls": [external_call(recordings=legs)]})
    body = await get_call(client, org)
    # Deleted and excluded legs are invisible; the others are listed and counted.
    assert [r["id"] for r in body["recordings"]] == [LEG_1, LEG_4, LEG_5, LEG_6]
    assert body["recording_count"] == 4
    # Awaiting redaction and without audio: visible, but no URL.
    assert url_leg_ids(body) == [LEG_1, LEG_6]
    # The list reads a page's legs in a statement of its own: the same legs, URLs and body.
    response = await client.get("/v1/external_calls", headers=org.headers)
    (listed,) = response.json()["external_calls"]
    assert url_leg_ids(listed) == [LEG_1, LEG_6]
    assert {k: v for k, v in listed.items() if k != "recording_presigned_urls"} == {
        k: v for k, v in body.items() if k != "recording_presigned_urls"
    }


async def test_no_playable_leg_gives_empty_url_list(app, client):
    org = await make_org(app)
    legs = [leg(LEG_1, "2025-03-01T10:00:00Z", wav(), awaiting_redaction=True)]
    await load(app, org, {"external_calls": [external_call(recordings=legs)]})
    body = await get_call(client, org)
    assert body["recording_presigned_urls"] == []
    assert body["recording_count"] == 1

    await load(app, org, {"external_calls": [external_call(LEG_6, source=None)]})
    bare = await get_call(client, org, LEG_6)
    assert bare["recordings"] == [] and bare["recording_presigned_urls"] == []
    assert bare["recording_count"] == 0
    assert bare["source"] is None


async def test_legs_without_start_time_come_last(app, client):
    org = await make_org(app)
    legs = [
        {"id": LEG_1, "file_name": "a.wav"},
        leg(LEG_2, "2025-03-01T10:01:00Z"),
        leg(LEG_3, "2025-03-01T10:00:00Z"),
    ]
    await load(app, org, {"external_calls": [external_call(recordings=legs)]})
    body = await get_call(client, org)
    assert [r["id"] for r in body["recordings"]] == [LEG_3, LEG_2, LEG_1]


class FailingStorage(LocalStorage):
    """Local storage whose URL signing fails for one key."""

    def __init__(self, base: LocalStorage, failing_key: str) -> None:
        super().__init__(base.root)
        self.failing_key = failing_key

    def presigned_url(self, key: str, content_type: str) -> str | None:
        if key == self.failing_key:
            raise StorageError("signing service unavailable")
        return super().presigned_url(key, content_type)


async def test_signing_failure_leaves_that_url_out_and_still_answers(app, client):
    org = await make_org(app)
    legs = [leg(i, f"2025-03-01T10:0{n}:00Z", wav()) for n, i in enumerate((LEG_1, LEG_2, LEG_3))]
    await load(app, org, {"external_calls": [external_call(recordings=legs)]})
    runtime = runtime_of(app)
    assert isinstance(runtime.storage, LocalStorage)
    runtime.storage = FailingStorage(runtime.storage, f"{org.id}/{LEG_2}")
    body = await get_call(client, org)
    assert url_leg_ids(body) == [LEG_1, LEG_3]
    assert [r["id"] for r in body["recordings"]] == [LEG_1, LEG_2, LEG_3]
    assert body["recording_count"] == 3

    listed = await client.get("/v1/external_calls", headers=org.headers)
    assert listed.status_code == 200
    assert url_leg_ids(listed.json()["external_calls"][0]) == [LEG_1, LEG_3]


async def test_unknown_external_call_is_404_status_shape(app, client):
    org = await make_org(app)
    response = await client.get(f"/v1/external_calls/{uuid.uuid4()}", headers=org.headers)
    assert response.status_code == 404
    assert response.json() == {
        "status": "error",
        "success": False,
        "error": "External call not found",
        "errors": ["External call not found"],
    }


async def test_another_organizations_call_is_indistinguishable_from_missing(app, client):
    owner = await make_org(app, "Owner")
    other = await make_org(app, "Other")
    await load(
        app,
        owner,
        {"external_calls": [external_call(recordings=[leg(LEG_1, "2025-03-01T10:00:00Z", wav())])]},
    )
    theirs = await client.get(f"/v1/external_calls/{CALL}", headers=other.headers)
    missing = await client.get(f"/v1/external_calls/{uuid.uuid4()}", headers=other.headers)
    assert theirs.status_code == missing.status_code == 404
    assert theirs.json() == missing.json()
    listed = await client.get("/v1/external_calls", headers=other.headers)
    assert listed.json()["external_calls"] == [] and listed.json()["total_count"] == 0


async def test_same_ids_in_two_organizations_stay_apart(app, client):
    first = await make_org(app, "First")
    second = await make_org(app, "Second")
    for org, title in ((first, "first"), (second, "second")):
        call = external_call(title=title, recordings=[leg(LEG_1, "2025-03-01T10:00:00Z", wav())])
        await load(app, org, {"external_calls": [call]})
    assert (await get_call(client, first))["title"] == "first"
    assert (await get_call(client, second))["title"] == "second"


@pytest.mark.parametrize(
    "path",
    ["not-a-uuid", "1234", "5d7c1b2a-0000-4000-8000-00000000c00g", "' OR 1=1 --", "%00", "é" * 40],
    ids=["word", "number", "bad-hex", "injection", "nul", "unicode"],
)
async def test_malformed_uuid_is_422_detail_without_echo(app, client, path):
    org = await make_org(app)
    response = await client.get(f"/v1/external_calls/{path}", headers=org.headers)
    assert response.status_code == 422
    body = response.json()
    assert set(body) == {"detail"}
    [item] = body["detail"]
    assert set(item) == {"loc", "msg", "type"}
    assert item["loc"] == ["path", "uuid"]
    assert path not in item["msg"]


@pytest.mark.parametrize("path", ["/v1/external_calls", f"/v1/external_calls/{CALL}"])
@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer cp_unknown"}, {"Authorization": "Basic abc"}],
    ids=["missing", "unknown", "basic"],
)
async def test_authentication_failure_is_401_status_shape(app, client, path, headers):
    response = await client.get(path, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    body = response.json()
    assert body["status"] == "error" and body["success"] is False
    assert isinstance(body["error"], str) and body["errors"] == [body["error"]]


async def test_list_newest_first_with_pages(app, client):
    org = await make_org(app)
    calls = [
        external_call(
            f"5d7c1b2a-0000-4000-8000-0000000010{n:02d}",
            created_at=f"2025-03-{n + 1:02d}T00:00:00Z",
            recordings=[
                leg(f"5d7c1b2a-0000-4000-8000-0000000020{n:02d}", "2025-03-01T00:00:00Z", wav())
            ],
        )
        for n in range(5)
    ]
    await load(app, org, {"external_calls": calls})
    response = await client.get("/v1/external_calls?page_size=2", headers=org.headers)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"external_calls", "total_count", "page", "page_size", "total_pages"}
    assert (body["total_count"], body["page"], body["page_size"], body["total_pages"]) == (
        5,
        1,
        2,
        3,
    )
    assert [c["id"][-2:] for c in body["external_calls"]] == ["04", "03"]
    # Each listed call has the same shape as the single read, legs and URLs included.
    single = await get_call(client, org, body["external_calls"][0]["id"])
    listed = body["external_calls"][0]
    assert {k: v for k, v in listed.items() if k != "recording_presigned_urls"} == {
        k: v for k, v in single.items() if k != "recording_presigned_urls"
    }
    assert len(listed["recording_presigned_urls"]) == 1

    last = (await client.get("/v1/external_calls?page=3&page_size=2", headers=org.headers)).json()
    assert [c["id"][-2:] for c in last["external_calls"]] == ["00"]
    past = (await client.get("/v1/external_calls?page=4&page_size=2", headers=org.headers)).json()
    assert past["external_calls"] == [] and past["total_count"] == 5


async def test_list_defaults_and_ties_broken_by_id(app, client):
    org = await make_org(app)
    ids = [f"5d7c1b2a-0000-4000-8000-0000000030{n:02d}" for n in range(3)]
    same = "2025-03-01T00:00:00Z"
    await load(app, org, {"external_calls": [external_call(i, created_at=same) for i in ids]})
    body = (await client.get("/v1/external_calls", headers=org.headers)).json()
    assert (body["page"], body["page_size"], body["total_pages"]) == (1, 20, 1)
    assert [c["id"] for c in body["external_calls"]] == list(reversed(ids))


@pytest.mark.parametrize("query", OUT_OF_RANGE_PAGING)
async def test_list_out_of_range_is_422_detail(app, client, query):
    org = await make_org(app)
    response = await client.get(f"/v1/external_calls?{query}", headers=org.headers)
    assert response.status_code == 422
    [item] = response.json()["detail"]
    assert set(item) == {"loc", "msg", "type"}
    assert item["loc"][0] == "query"


async def test_loader_rejects_bad_audio_and_writes_nothing(app, client):
    from callplane.loader import LoadError

    org = await make_org(app)
    bad = external_call(recordings=[leg(LEG_1, "2025-03-01T10:00:00Z", audio_base64="***")])
    with pytest.raises(LoadError, match=r"recordings\[0\]\.audio_base64"):
        await load(app, org, {"external_calls": [bad]})
    missing = await client.get(f"/v1/external_calls/{CALL}", headers=org.headers)
    assert missing.status_code == 404


@pytest.mark.parametrize(
    "change",
    [
        {"direction": "sideways"},
        {"status": "done"},
        {"recordings": [{"id": LEG_1, "status": "weird"}]},
        {"recordings": [{"id": LEG_1, "content_type": "text/html"}]},
        {"recordings": [{"id": LEG_1, "transcript": [{"speaker": "a"}]}]},
        {"unknown": 1},
    ],
    ids=["direction", "status", "leg-status", "content-type", "transcript-entry", "unknown"],
)
async def test_loader_validates_items(app, change):
    from callplane.loader import LoadError

    org = await make_org(app)
    with pytest.raises(LoadError, match=r"external_calls\[0\]"):
        await load(app, org, {"external_calls": [external_call(**change)]})


async def test_reloading_an_existing_recording_id_never_replaces_its_audio(app, client):
    from callplane.loader import LoadError

    org = await make_org(app)
    original = wav(fill=1)
    await load(
        app,
        org,
        {
            "external_calls": [
                external_call(recordings=[leg(LEG_1, "2025-03-01T10:00:00Z", original)])
            ]
        },
    )
    other = external_call(LEG_6, recordings=[leg(LEG_1, "2025-03-01T10:00:00Z", wav(fill=2))])
    with pytest.raises((LoadError, CallplaneError)):
        await load(app, org, {"external_calls": [other]})
    body = await get_call(client, org)
    [url] = body["recording_presigned_urls"]
    audio = await client.get(url.removeprefix("http://127.0.0.1:8000"))
    assert audio.status_code == 200 and audio.content == original
