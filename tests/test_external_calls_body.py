"""The bytes of GET /v1/external_calls and GET /v1/external_calls/{uuid}, pinned on both
databases: the reads are a hot path whose body is built from raw rows (ids and timestamps as the
database stores them), so every field's exact rendering is asserted here, not only its value.
URL query strings carry the expiry and its MAC, so they are masked (their validity is tested in
tests/test_recordings.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from callplane.external_calls import fast
from tests.conftest import BACKEND
from tests.factories import load, make_org
from tests.test_external_calls_data import TRANSCRIPT, external_call, leg, wav
from tests.test_fast_paths import fast_paths_served

_QUERY = re.compile(rb"\?expires=[0-9]{10}&signature=[A-Za-z0-9_-]{43}\"")

A = "5d7c1b2a-0000-4000-8000-0000000a0001"
B = "5D7C1B2A-0000-4000-8000-0000000B0002"  # loaded in upper case: read back in lower case
C = "5d7c1b2a-0000-4000-8000-0000000c0003"
LEGS = [f"5d7c1b2a-0000-4000-8000-00000000f{n:03d}" for n in range(8)]


def documents() -> tuple[dict[str, object], dict[str, object]]:
    a = external_call(
        A,
        created_at="2025-03-03T00:00:00Z",
        # An offset and microseconds: read back in UTC with its microseconds.
        updated_at="2025-03-03T01:02:03.456789+02:00",
        recordings=[
            leg(LEGS[0], "2025-03-01T10:00:00Z", wav(), transcript=TRANSCRIPT, summary="Hi"),
            leg(LEGS[1], "2025-03-01T10:00:00.000001Z", wav(), status="pending"),
            leg(LEGS[2], "2025-03-01T09:00:00Z", wav(), awaiting_redaction=True),
            leg(LEGS[3], "2025-03-01T10:01:00Z", status="error", transcript=[], summary="x"),
            leg(LEGS[4], "2025-03-01T08:00:00Z", wav(), deleted=True),
            leg(LEGS[5], "2025-03-01T08:00:00Z", wav(), excluded=True),
            {"id": LEGS[6], "file_name": "late.wav", "created_at": "2025-03-02T00:00:00.5Z"},
            leg(LEGS[7], "2025-03-01T10:00:00Z", wav(), status="transcribed", transcript=[]),
        ],
    )
    b = {
        "id": B,
        "created_at": "2025-03-02T23:59:59.999999Z",
        "updated_at": "2025-03-02T23:59:59.999999Z",
    }
    c = external_call(
        C,
        created_at="2025-03-03T00:00:00Z",  # A's created_at: the id breaks the tie
        started_at="2025-01-01T00:00:00+05:30",
        duration_seconds=0,
        source={"name": "Dialer"},
        recordings=[leg(LEGS[0][:-1] + "9", "2025-03-01T10:00:00Z", wav())],
    )
    other = external_call(A, title="another organization's", created_at="2030-01-01T00:00:00Z")
    return {"external_calls": [a, b, c]}, {"external_calls": [other]}


def masked(body: bytes) -> bytes:
    return _QUERY.sub(b'?expires=E&signature=S"', body)


URL = "http://127.0.0.1:8000/v1/recordings/{}/audio?expires=E&signature=S"
SOURCE_A = '{"id":"5d7c1b2a-0000-4000-8000-00000000500e","name":"Zoom import","provider":"zoom"}'
# PostgreSQL's jsonb keeps an object's keys in its own order (shorter keys first).
TRANSCRIPT_TEXT = (
    '[{"end":1.5,"text":"Hello, how can I help?","start":0.0,"channel":"left","speaker":"agent",'
    '"confidence":0.97}]'
    if BACKEND == "postgresql"
    else '[{"speaker":"agent","text":"Hello, how can I help?","start":0.0,"end":1.5,'
    '"confidence":0.97,"channel":"left"}]'
)
CALL_C = (
    '{"id":"5d7c1b2a-0000-4000-8000-0000000c0003","external_call_id":"ext-42",'
    '"title":"Support line","direction":"outbound","from_number":"+14155550100",'
    '"to_number":"+14155550199","duration_seconds":0,"started_at":"2024-12-31T18:30:00Z",'
    '"status":"transcribed","recording_count":1,'
    '"source":{"id":null,"name":"Dialer","provider":null},'
    '"created_at":"2025-03-03T00:00:00Z","updated_at":"2025-03-03T00:00:00Z",'
    f'"recording_presigned_urls":["{URL.format(LEGS[0][:-1] + "9")}"],'
    '"recordings":[{"id":"5d7c1b2a-0000-4000-8000-00000000f009","file_name":"09.wav",'
    '"status":"pending","started_at":"2025-03-01T10:00:00Z","transcript":null,"summary":null,'
    '"created_at":"2025-03-03T00:00:00Z","updated_at":"2025-03-03T00:00:00Z","error":null}]}'
)


def _leg_a(n: int, started: str, status: str, transcript: str, summary: str, created: str) -> str:
    return (
        f'{{"id":"{LEGS[n]}","file_name":"{LEGS[n][-2:]}.wav","status":"{status}",'
        f'"started_at":{started},"transcript":{transcript},"summary":{summary},'
        f'"created_at":"{created}","updated_at":"{created}","error":null}}'
    )


_CREATED_A = "2025-03-03T00:00:00Z"
CALL_A = (
    '{"id":"5d7c1b2a-0000-4000-8000-0000000a0001","external_call_id":"ext-42",'
    '"title":"Support line","direction":"outbound","from_number":"+14155550100",'
    '"to_number":"+14155550199","duration_seconds":95,"started_at":"2025-03-01T10:00:00Z",'
    '"status":"transcribed","recording_count":6,"source":' + SOURCE_A + ","
    '"created_at":"2025-03-03T00:00:00Z","updated_at":"2025-03-02T23:02:03.456789Z",'
    '"recording_presigned_urls":['
    + ",".join(f'"{URL.format(LEGS[n])}"' for n in (0, 7, 1))
    + '],"recordings":['
    + ",".join(
        (
            _leg_a(2, '"2025-03-01T09:00:00Z"', "pending", "null", "null", _CREATED_A),
            _leg_a(0, '"2025-03-01T10:00:00Z"', "transcribed", TRANSCRIPT_TEXT, '"Hi"', _CREATED_A),
            _leg_a(7, '"2025-03-01T10:00:00Z"', "transcribed", "[]", "null", _CREATED_A),
            _leg_a(1, '"2025-03-01T10:00:00.000001Z"', "pending", "null", "null", _CREATED_A),
            _leg_a(3, '"2025-03-01T10:01:00Z"', "error", "null", "null", _CREATED_A),
            f'{{"id":"{LEGS[6]}","file_name":"late.wav","status":"pending","started_at":null,'
            '"transcript":null,"summary":null,"created_at":"2025-03-02T00:00:00.500000Z",'
            '"updated_at":"2025-03-02T00:00:00.500000Z","error":null}',
        )
    )
    + "]}"
)
CALL_B = (
    '{"id":"5d7c1b2a-0000-4000-8000-0000000b0002","external_call_id":null,"title":null,'
    '"direction":"inbound","from_number":null,"to_number":null,"duration_seconds":null,'
    '"started_at":null,"status":"processing","recording_count":0,"source":null,'
    '"created_at":"2025-03-02T23:59:59.999999Z","updated_at":"2025-03-02T23:59:59.999999Z",'
    '"recording_presigned_urls":[],"recordings":[]}'
)


async def test_list_body_bytes(app, client):
    org = await make_org(app)
    ours, theirs = documents()
    await load(app, org, ours)
    await load(app, await make_org(app, "Other"), theirs)

    first = await client.get("/v1/external_calls?page_size=2", headers=org.headers)
    assert first.status_code == 200
    assert first.headers["content-type"] == "application/json"
    assert masked(first.content) == listing([CALL_C, CALL_A], page=1, page_size=2, pages=2)
    second = await client.get("/v1/external_calls?page=2&page_size=2", headers=org.headers)
    assert masked(second.content) == listing([CALL_B], page=2, page_size=2, pages=2)
    past = await client.get("/v1/external_calls?page=3&page_size=2", headers=org.headers)
    assert past.content == listing([], page=3, page_size=2, pages=2)
    default = await client.get("/v1/external_calls", headers=org.headers)
    assert masked(default.content) == listing(
        [CALL_C, CALL_A, CALL_B], page=1, page_size=20, pages=1
    )


def listing(calls: list[str], *, page: int, page_size: int, pages: int) -> bytes:
    return (
        '{"external_calls":[' + ",".join(calls) + '],"total_count":3,'
        f'"page":{page},"page_size":{page_size},"total_pages":{pages}}}'
    ).encode()


async def test_single_read_body_bytes(app, client):
    org = await make_org(app)
    ours, theirs = documents()
    await load(app, org, ours)
    await load(app, await make_org(app, "Other"), theirs)
    for call_id, expected in ((A, CALL_A), (B, CALL_B), (C, CALL_C)):
        for spelled in (call_id, call_id.upper(), call_id.replace("-", "")):
            response = await client.get(f"/v1/external_calls/{spelled}", headers=org.headers)
            assert response.status_code == 200
            assert response.headers["content-type"] == "application/json"
            assert masked(response.content) == expected.encode()


@pytest.fixture
def hot_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The routes of the requests that a fast path (``external_calls.fast``) answered."""
    return fast_paths_served(monkeypatch)


async def test_the_routes_and_the_hot_path_answer_the_same_bytes(app, client, hot_reads):
    org = await make_org(app)
    await load(app, org, documents()[0])

    async def body(url: str) -> bytes:
        response = await client.get(url, headers=org.headers)
        assert response.status_code == 200
        return masked(response.content)

    hot_list = await body("/v1/external_calls?page_size=2&page=1")
    hot_call = await body(f"/v1/external_calls/{A}")
    assert len(hot_reads) == 2
    # Spellings the hot path leaves to the routes: the same answer.
    for url in (
        "/v1/external_calls?page_size=02",
        "/v1/external_calls?page_size=2&unknown=1",
        "/v1/external_calls?page_size=%32",
    ):
        assert await body(url) == hot_list, url
    for spelled in (A.replace("-", ""), "{" + A + "}", "urn:uuid:" + A):
        assert await body(f"/v1/external_calls/{spelled}") == hot_call, spelled
    assert len(hot_reads) == 2


@pytest.mark.parametrize(
    "query", ["page=0", "page_size=101", "page=1000001", "page=x", "page_size=", "page=-1"]
)
async def test_paging_the_route_refuses_is_left_to_it(app, client, hot_reads, query):
    org = await make_org(app)
    response = await client.get(f"/v1/external_calls?{query}", headers=org.headers)
    assert response.status_code == 422
    assert set(response.json()) == {"detail"}
    assert hot_reads == []


@pytest.mark.parametrize("path", ["/v1/external_calls", f"/v1/external_calls/{A}"])
async def test_a_bug_in_the_hot_path_is_a_500_in_the_family_shape(app, client, monkeypatch, path):
    org = await make_org(app)

    async def broken(*_args: Any) -> dict[str, Any]:
        raise RuntimeError("a bug")

    monkeypatch.setattr(fast.reads, "external_calls_page", broken)
    monkeypatch.setattr(fast.reads, "external_call_body", broken)
    response = await client.get(path, headers=org.headers)
    assert response.status_code == 500
    assert response.json() == {
        "status": "error",
        "success": False,
        "error": "Internal server error",
        "errors": ["Internal server error"],
    }
