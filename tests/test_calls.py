"""POST /v1/calls, GET /v1/calls, GET /v1/calls/{uuid} (docs/api-contract.md#extension-routes), the
Call resource (SPEC), and the calls fixture section (docs/api-contract.md#the-fixture-document)."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import func, select

from callplane.models.calls import CallAttribute
from tests.factories import load, make_org, runtime_of
from tests.test_calls_helpers import (
    AGENT_UUID,
    BASICS,
    CALL_FIELDS,
    TAG_ESC,
    TAG_VIP,
    VOICE_UUID,
    assert_status_error,
    count_calls,
    stamp,
)

# --- POST /calls ---------------------------------------------------------------------------


async def test_create_call_enqueues_and_returns_the_full_call(app, client):
    org = await make_org(app)
    await load(app, org, BASICS)
    response = await client.post(
        "/v1/calls",
        headers=org.headers,
        json={
            "to_number": "(415) 555-0123",
            "from_number": "+44 20 7183 8750",
            "agent_id": AGENT_UUID,
            "voice_id": VOICE_UUID,
            "call_prompt": "Confirm the appointment",
            "language": "en-US",
            "agent_speaks_first": True,
            "params": {"order": "A-1", "amount": 12.5, "vip": True},
            "external_identifiers": {"crm_id": "c-77"},
            "keyterms": ["Acme"],
            "analyzers": [
                {"prompt": "Was it booked?", "output_config": {"type": "object", "properties": {}}}
            ],
            "tags": [TAG_ESC, TAG_VIP],
        },
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["success"] is True and body["status"] == "enqueued"
    call = body["call"]
    assert list(call) == CALL_FIELDS
    assert call["id"] == body["call_id"]
    assert call["status"] == "enqueued" and call["direction"] == "outbound"
    # Numbers are normalized to E.164 (US assumed without a country code).
    assert call["to_number"] == "+14155550123"
    assert call["from_number"] == "+442071838750"
    assert call["agent_id"] == AGENT_UUID and call["voice_id"] == VOICE_UUID
    assert call["params"] == {"order": "A-1", "amount": 12.5, "vip": True}
    assert call["external_identifiers"] == {"crm_id": "c-77"}
    assert [t["id"] for t in call["tags"]] == [TAG_ESC, TAG_VIP]
    assert call["tags"][1] == {
        "id": TAG_VIP,
        "name": "VIP",
        "description": "High value",
        "color": "#d4af37",
    }
    assert call["recording_presigned_url"] is None
    assert call["transcripts"] == [] and call["keyterms"] == ["Acme"]
    [analyzer] = call["analyzers"]
    uuid.UUID(analyzer["id"])
    assert analyzer["prompt"] == "Was it booked?"
    assert call["created_at"].endswith("Z")
    assert call["id"] != call["simple_uuid"]

    fetched = await client.get(f"/v1/calls/{call['id']}", headers=org.headers)
    assert fetched.status_code == 200
    assert fetched.json() == {"success": True, "call": call}


async def test_create_call_minimal(app, client):
    org = await make_org(app)
    response = await client.post("/v1/calls", headers=org.headers, json={"to_number": "4155550123"})
    assert response.status_code == 201
    call = response.json()["call"]
    assert call["params"] == {} and call["tags"] == [] and call["agent_id"] is None


@pytest.mark.parametrize(
    "body, field",
    [
        pytest.param({}, "to_number", id="missing-to"),
        pytest.param({"to_number": "hello"}, "to_number", id="not-a-number"),
        pytest.param({"to_number": "+1 2"}, "to_number", id="impossible"),
        pytest.param({"to_number": 4155550123}, "to_number", id="number-type"),
        pytest.param({"to_number": "+14155550123", "from_number": "x"}, "from_number", id="from"),
        pytest.param({"to_number": "+14155550123", "params": []}, "params", id="params-list"),
        pytest.param(
            {"to_number": "+14155550123", "params": {"a": "x\u0000y"}}, "params", id="nul-value"
        ),
        pytest.param({"to_number": "+14155550123", "params": {"": 1}}, "params", id="empty-key"),
        pytest.param(
            {"to_number": "+14155550123", "params": {"k" * 256: 1}}, "params", id="long-key"
        ),
        pytest.param(
            {"to_number": "+14155550123", "params": {"big": "x" * 70_000}}, "params", id="huge"
        ),
        pytest.param(
            {"to_number": "+14155550123", "external_identifiers": "abc"},
            "external_identifiers",
            id="ext-string",
        ),
        pytest.param({"to_number": "+14155550123", "agent_id": "nope"}, "agent_id", id="agent"),
        pytest.param(
            {"to_number": "+14155550123", "agent_speaks_first": "yes"},
            "agent_speaks_first",
            id="bool",
        ),
        pytest.param({"to_number": "+14155550123", "tags": ["x"]}, "tags", id="tag-uuid"),
        pytest.param({"to_number": "+14155550123", "keyterms": [1]}, "keyterms", id="keyterm-type"),
        pytest.param(
            {"to_number": "+14155550123", "first_mesage": "Hi"}, "first_mesage", id="misspelt"
        ),
    ],
)
async def test_create_call_invalid_bodies_are_422_status_shape(app, client, body, field):
    org = await make_org(app)
    response = await client.post("/v1/calls", headers=org.headers, json=body)
    error = assert_status_error(response, 422)
    assert error["error"].startswith(field)
    assert await count_calls(app, org.id) == 0


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b'{"to_number": "+14155550123", "params": {"a": NaN}}', id="nan"),
        pytest.param(b'{"to_number": "+14155550123", "params": {"a": "\\ud800"}}', id="surrogate"),
        pytest.param(b'{"to_number": "+14155550123", "params": {"\\u0000": 1}}', id="nul-key"),
        pytest.param(b'{"to_number": ', id="malformed"),
        pytest.param(b"[1, 2]", id="array"),
    ],
)
async def test_create_call_hostile_json_is_422_never_500(app, client, raw):
    org = await make_org(app)
    response = await client.post(
        "/v1/calls",
        headers={**org.headers, "Content-Type": "application/json"},
        content=raw,
    )
    assert_status_error(response, 422)
    assert await count_calls(app, org.id) == 0


async def test_references_of_another_organization_are_422(app, client):
    mine = await make_org(app, "mine")
    theirs = await make_org(app, "theirs")
    await load(app, theirs, BASICS)
    for field, value in (
        ("agent_id", AGENT_UUID),
        ("voice_id", VOICE_UUID),
        ("tags", [TAG_VIP]),
    ):
        response = await client.post(
            "/v1/calls", headers=mine.headers, json={"to_number": "+14155550123", field: value}
        )
        error = assert_status_error(response, 422)
        assert error["error"].startswith(field)
    assert await count_calls(app, mine.id) == 0


async def test_unicode_and_injection_looking_params_round_trip(app, client):
    org = await make_org(app)
    params = {
        "名前": "テスト 🚀",
        "'; DROP TABLE calls; --": "1 OR 1=1",
        'a"b\\c': {"nested": ["x", None]},
    }
    response = await client.post(
        "/v1/calls", headers=org.headers, json={"to_number": "+14155550123", "params": params}
    )
    assert response.status_code == 201
    call_id = response.json()["call_id"]
    fetched = await client.get(f"/v1/calls/{call_id}", headers=org.headers)
    assert fetched.json()["call"]["params"] == params


async def test_unauthenticated_create_is_401_status_shape(app, client):
    response = await client.post("/v1/calls", json={"to_number": "+14155550123"})
    assert_status_error(response, 401)
    bad = await client.post(
        "/v1/calls",
        headers={"Authorization": "Bearer cp_nope"},
        json={"to_number": "+14155550123"},
    )
    assert_status_error(bad, 401)


# --- GET /calls/{uuid} ---------------------------------------------------------------------


async def test_get_call_of_another_organization_is_404(app, client):
    mine = await make_org(app, "mine")
    theirs = await make_org(app, "theirs")
    [call_id] = (await load(app, theirs, {"calls": [{"to_number": "+1415"}]}))["calls"]
    response = await client.get(f"/v1/calls/{call_id}", headers=mine.headers)
    error = assert_status_error(response, 404)
    missing = await client.get(f"/v1/calls/{uuid.uuid4()}", headers=mine.headers)
    assert missing.json() == error


async def test_get_call_malformed_uuid_is_422_status_shape(app, client):
    org = await make_org(app)
    response = await client.get("/v1/calls/not-a-uuid'--", headers=org.headers)
    assert_status_error(response, 422)


# --- GET /calls ----------------------------------------------------------------------------


async def test_list_calls_newest_first_paginated_and_filtered(app, client):
    org = await make_org(app)
    other = await make_org(app, "other")
    await load(app, other, {"calls": [{"created_at": stamp(99)}]})
    await load(
        app,
        org,
        {
            "calls": [
                {"created_at": stamp(1), "status": "completed", "direction": "inbound"},
                {"created_at": stamp(3), "status": "enqueued", "direction": "outbound"},
                {"created_at": stamp(2), "status": "completed", "direction": "outbound"},
            ]
        },
    )
    page1 = (await client.get("/v1/calls?page_size=2", headers=org.headers)).json()
    assert page1["total_count"] == 3 and page1["total_pages"] == 2 and page1["page"] == 1
    assert [c["created_at"][:19] for c in page1["calls"]] == [stamp(3)[:19], stamp(2)[:19]]
    assert list(page1["calls"][0]) == CALL_FIELDS
    page2 = (await client.get("/v1/calls?page_size=2&page=2", headers=org.headers)).json()
    assert [c["created_at"][:19] for c in page2["calls"]] == [stamp(1)[:19]]

    completed = (await client.get("/v1/calls?status=completed", headers=org.headers)).json()
    assert completed["total_count"] == 2
    inbound = (await client.get("/v1/calls?direction=inbound", headers=org.headers)).json()
    assert inbound["total_count"] == 1
    window = await client.get(
        "/v1/calls",
        params={"created_after": stamp(1), "created_before": stamp(3)},
        headers=org.headers,
    )
    assert [c["created_at"][:19] for c in window.json()["calls"]] == [stamp(2)[:19]]


@pytest.mark.parametrize(
    "query",
    [
        "page=0",
        "page_size=101",
        "page_size=abc",
        "status=unknown",
        "direction=up",
        "created_after=x",
    ],
)
async def test_list_calls_bad_query_is_422_status_shape(app, client, query):
    org = await make_org(app)
    assert_status_error(await client.get(f"/v1/calls?{query}", headers=org.headers), 422)


# --- Fixture section -----------------------------------------------------------------------


async def test_fixture_calls_keep_every_field(app, client):
    org = await make_org(app)
    call_id = "5a0b0c0d-0000-4000-8000-000000000001"
    document = {
        **BASICS,
        "calls": [
            {
                "id": call_id,
                "simple_uuid": "5a0b0c0d-0000-4000-8000-000000000002",
                "from_number": "+14155550123",
                "to_number": "+14155550199",
                "status": "completed",
                "started_at": "2026-01-01T10:00:00Z",
                "ended_at": "2026-01-01T10:02:05Z",
                "duration": 125,
                "created_at": "2026-01-01T09:59:00+01:00",
                "transcripts": [
                    {"text": "Hello", "role": "agent", "timestamp": 0.5},
                    {
                        "text": "",
                        "role": "tool",
                        "timestamp": 3,
                        "function_name": "lookup",
                        "arguments": {"id": 7},
                    },
                ],
                "screen_pop_token": "spt_1",
                "call_prompt": "Be nice",
                "answered_by": "voicemail",
                "language": "en-US",
                "transferred": True,
                "handoff_metadata": {
                    "genesys": {
                        "conversation_id": "c1",
                        "tenant_name": "t",
                        "campaign_name": "spring",
                        "transferred_at": "2026-01-01T10:01:00Z",
                    }
                },
                "direction": "inbound",
                "tags": [TAG_VIP],
                "voice_id": VOICE_UUID,
                "agent_speaks_first": False,
                "agent_id": AGENT_UUID,
                "agent_branch": "7d2c6a9e-0000-4000-8000-000000000003",
                "agent_commit_id": "7d2c6a9e-0000-4000-8000-000000000004",
                "agent_branch_name": "main",
                "external_identifiers": {"crm_id": "c-1"},
                "params": {"order": "A-1"},
                "cart": {"value": 12, "checkout": {"order_ids": ["o1"]}},
                "analyzers": [
                    {
                        "id": "7d2c6a9e-0000-4000-8000-000000000005",
                        "prompt": "Booked?",
                        "output_config": {"type": "object", "properties": {}},
                    }
                ],
                "analysis_results": [
                    {
                        "id": "7d2c6a9e-0000-4000-8000-000000000006",
                        "analyzer_id": "7d2c6a9e-0000-4000-8000-000000000005",
                        "prompt": "Booked?",
                        "output_config": {"type": "object"},
                        "result": {"booked": True},
                    }
                ],
                "summary": "Booked a table",
                "keyterms": ["table"],
                "first_message": "Good evening, this is Chez Nous.",
            }
        ],
    }
    created = await load(app, org, document)
    assert created["calls"] == [call_id]
    call = (await client.get(f"/v1/calls/{call_id}", headers=org.headers)).json()["call"]
    source = document["calls"][0]
    for field in CALL_FIELDS:
        if field in ("tags", "created_at", "updated_at", "started_at", "ended_at"):
            continue
        # no fixture sets them
        if field in ("recording_presigned_url", "campaign_id", "transcript_deleted_at"):
            assert call[field] is None
            continue
        assert call[field] == source[field], field
    assert call["created_at"].startswith("2026-01-01T08:59:00")
    assert call["started_at"].startswith("2026-01-01T10:00:00")
    assert call["tags"] == [
        {"id": TAG_VIP, "name": "VIP", "description": "High value", "color": "#d4af37"}
    ]
    async with runtime_of(app).db.session(write=False) as session:
        indexed = await session.scalar(select(func.count()).select_from(CallAttribute))
    assert indexed == 2


@pytest.mark.parametrize(
    "item, message",
    [
        pytest.param({"status": "paused"}, "calls[0].status", id="status"),
        pytest.param({"tags": [TAG_VIP]}, "calls[0].tags", id="unknown-tag"),
        pytest.param({"agent_id": AGENT_UUID}, "calls[0].agent_id", id="unknown-agent"),
        pytest.param({"nope": 1}, "calls[0].nope", id="unknown-field"),
        pytest.param({"params": {"a": "\u0000"}}, "calls[0].params", id="nul"),
    ],
)
async def test_fixture_bad_calls_abort_the_load(app, item, message):
    from callplane.loader import LoadError

    org = await make_org(app)
    with pytest.raises(LoadError) as raised:
        await load(app, org, {"calls": [item]})
    assert str(raised.value).startswith(message)
    assert await count_calls(app, org.id) == 0


async def test_demo_documents_load_and_the_readme_examples_answer(app, client):
    """The calls demo data loads beside the foundation's, and README's lookups find it."""
    import json
    from importlib.resources import files

    demo = files("callplane.demo")
    document = {
        **json.loads(demo.joinpath("foundation.json").read_text()),
        **json.loads(demo.joinpath("calls.json").read_text()),
    }
    org = await make_org(app)
    created = await load(app, org, document)
    assert len(created["calls"]) == 4 and len(created["feedback"]) == 2
    found = await client.get(
        "/v1/calls/find_by_attribute",
        params={"param_key": "account", "param_value": "ACC-42", "fields": "id,duration"},
        headers=org.headers,
    )
    assert found.json() == {
        "success": True,
        "call": {"id": "5c0f1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e02", "duration": 280},
    }


async def test_recording_presigned_url_is_signed_for_calls_with_a_recording(app, client):
    org = await make_org(app)
    with_recording, without = str(uuid.uuid4()), str(uuid.uuid4())
    await load(
        app,
        org,
        {
            "calls": [
                {"id": with_recording, "status": "completed", "created_at": stamp(2)},
                {"id": without, "status": "completed", "created_at": stamp(1)},
            ],
            "call_recordings": [
                {"call_id": with_recording, "file_name": "call.wav", "audio_base64": "UklGRgAAAAA="}
            ],
        },
    )
    listed = (await client.get("/v1/calls", headers=org.headers)).json()["calls"]
    urls = {c["id"]: c["recording_presigned_url"] for c in listed}
    assert urls[without] is None
    assert urls[with_recording] and "signature=" in urls[with_recording]
    one = (await client.get(f"/v1/calls/{with_recording}", headers=org.headers)).json()
    assert (
        one["call"]["recording_presigned_url"].split("?")[0] == urls[with_recording].split("?")[0]
    )
