"""Feedback on call transcripts (docs/api-contract.md#extension-routes) and SPEC's POST
/v1/feedback/{uuid}/notes.

Validation errors are ``{"detail": [{loc, msg, type}]}``; others ``{"detail": str}``.
"""

from __future__ import annotations

import uuid

import pytest

from tests.factories import load, make_org
from tests.test_calls_helpers import assert_detail_list, assert_detail_message

CALL = "f0000000-0000-4000-8000-000000000001"
ENTRY = "fb000000-0000-4000-8000-000000000001"
ENTRY_FIELDS = [
    "uuid",
    "call_id",
    "transcript_index",
    "comment",
    "resolved",
    "resolved_at",
    "notes",
    "created_at",
    "updated_at",
]
TRANSCRIPT = [{"text": "Hi", "role": "agent"}, {"text": "Hello", "role": "user"}]


def _doc(resolved: bool = False, notes=None):
    return {
        "calls": [{"id": CALL, "status": "completed", "transcripts": TRANSCRIPT}],
        "feedback": [
            {
                "uuid": ENTRY,
                "call_id": CALL,
                "transcript_index": 1,
                "comment": "Wrong name",
                "resolved": resolved,
                "notes": notes or [],
            }
        ],
    }


@pytest.fixture
async def org(app):
    return await make_org(app)


# POST /feedback/{uuid}/notes (SPEC) --------------------------------------------------------


async def test_add_note_returns_the_note_authored_by_api(app, client, org):
    await load(app, org, _doc())
    response = await client.post(
        f"/v1/feedback/{ENTRY}/notes", headers=org.headers, json={"note": "Fixed the prompt"}
    )
    assert response.status_code == 200
    body = response.json()
    assert list(body) == ["success", "feedback_uuid", "note"]
    assert body["success"] is True and body["feedback_uuid"] == ENTRY
    assert set(body["note"]) == {"author_name", "note_text", "created_at"}
    assert body["note"]["author_name"] == "API"
    assert body["note"]["note_text"] == "Fixed the prompt"
    assert body["note"]["created_at"].endswith("Z")


async def test_notes_appear_on_the_entry_in_creation_order(app, client, org):
    await load(app, org, _doc(notes=["from the fixture"]))
    for text in ("first", "second", "third"):
        await client.post(f"/v1/feedback/{ENTRY}/notes", headers=org.headers, json={"note": text})
    listed = await client.get(f"/v1/calls/{CALL}/feedback", headers=org.headers)
    [entry] = listed.json()["feedback"]
    assert [n["note_text"] for n in entry["notes"]] == [
        "from the fixture",
        "first",
        "second",
        "third",
    ]
    assert {n["author_name"] for n in entry["notes"]} == {"API"}


@pytest.mark.parametrize("resolved", [False, True])
async def test_a_note_never_changes_resolved(app, client, org, resolved):
    await load(app, org, _doc(resolved=resolved))
    before = (await client.get(f"/v1/calls/{CALL}/feedback", headers=org.headers)).json()
    await client.post(f"/v1/feedback/{ENTRY}/notes", headers=org.headers, json={"note": "n"})
    after = (await client.get(f"/v1/calls/{CALL}/feedback", headers=org.headers)).json()
    for field in ("resolved", "resolved_at"):
        assert after["feedback"][0][field] == before["feedback"][0][field]
    assert after["feedback"][0]["resolved"] is resolved


async def test_note_on_unknown_feedback_is_404_detail_string(app, client, org):
    response = await client.post(
        f"/v1/feedback/{uuid.uuid4()}/notes", headers=org.headers, json={"note": "n"}
    )
    assert assert_detail_message(response, 404) == "Feedback not found"


async def test_note_on_another_organizations_feedback_is_404_and_adds_nothing(app, client, org):
    theirs = await make_org(app, "theirs")
    await load(app, theirs, _doc())
    response = await client.post(
        f"/v1/feedback/{ENTRY}/notes", headers=org.headers, json={"note": "sneaky"}
    )
    assert assert_detail_message(response, 404) == "Feedback not found"
    listed = await client.get(f"/v1/calls/{CALL}/feedback", headers=theirs.headers)
    assert listed.json()["feedback"][0]["notes"] == []


@pytest.mark.parametrize(
    "body, loc",
    [
        pytest.param({}, ["body", "note"], id="missing"),
        pytest.param({"note": ""}, ["body", "note"], id="empty"),
        pytest.param({"note": "x" * 10_001}, ["body", "note"], id="too-long"),
        pytest.param({"note": 5}, ["body", "note"], id="number"),
        pytest.param({"note": None}, ["body", "note"], id="null"),
        pytest.param({"note": ["a"]}, ["body", "note"], id="list"),
        pytest.param({"note": "a\u0000b"}, ["body", "note"], id="nul"),
    ],
)
async def test_invalid_note_is_422_detail_list(app, client, org, body, loc):
    await load(app, org, _doc())
    response = await client.post(f"/v1/feedback/{ENTRY}/notes", headers=org.headers, json=body)
    [item] = assert_detail_list(response)
    assert item["loc"] == loc


async def test_note_of_10000_characters_and_unicode_is_accepted(app, client, org):
    await load(app, org, _doc())
    for text in ("x" * 10_000, "注意 🚀 '; DROP TABLE feedback_notes; --"):
        response = await client.post(
            f"/v1/feedback/{ENTRY}/notes", headers=org.headers, json={"note": text}
        )
        assert response.status_code == 200
        assert response.json()["note"]["note_text"] == text


@pytest.mark.parametrize(
    "raw",
    [b'{"note": ', b"[]", b'"note"', b'{"note": "\\ud800"}'],
    ids=["cut", "array", "str", "surrogate"],
)
async def test_malformed_note_body_is_422_detail_list(app, client, org, raw):
    await load(app, org, _doc())
    response = await client.post(
        f"/v1/feedback/{ENTRY}/notes",
        headers={**org.headers, "Content-Type": "application/json"},
        content=raw,
    )
    assert_detail_list(response)


async def test_note_with_malformed_uuid_is_422_detail_list(app, client, org):
    response = await client.post(
        "/v1/feedback/not-a-uuid'--/notes", headers=org.headers, json={"note": "n"}
    )
    [item] = assert_detail_list(response)
    assert item["loc"] == ["path", "uuid"]
    assert "not-a-uuid" not in item["msg"]


async def test_note_unauthenticated_is_401_detail_string(client):
    response = await client.post(f"/v1/feedback/{ENTRY}/notes", json={"note": "n"})
    assert_detail_message(response, 401)


# Feedback entries (docs/api-contract.md#extension-routes) -----------------------------------------


async def test_create_and_list_feedback(app, client, org):
    await load(app, org, {"calls": [{"id": CALL, "transcripts": TRANSCRIPT}]})
    created = await client.post(
        f"/v1/calls/{CALL}/feedback",
        headers=org.headers,
        json={"transcript_index": 0, "comment": "Greeting too short"},
    )
    assert created.status_code == 201
    body = created.json()
    assert body["success"] is True
    entry = body["feedback"]
    assert list(entry) == ENTRY_FIELDS
    assert entry["call_id"] == CALL and entry["transcript_index"] == 0
    assert entry["resolved"] is False and entry["resolved_at"] is None and entry["notes"] == []
    second = await client.post(
        f"/v1/calls/{CALL}/feedback", headers=org.headers, json={"comment": "Overall fine"}
    )
    assert second.json()["feedback"]["transcript_index"] is None
    listed = await client.get(f"/v1/calls/{CALL}/feedback", headers=org.headers)
    assert listed.status_code == 200
    assert [e["uuid"] for e in listed.json()["feedback"]] == [
        entry["uuid"],
        second.json()["feedback"]["uuid"],
    ]


async def test_feedback_of_a_call_without_any_is_empty(app, client, org):
    await load(app, org, {"calls": [{"id": CALL}]})
    listed = await client.get(f"/v1/calls/{CALL}/feedback", headers=org.headers)
    assert listed.json() == {"feedback": []}


@pytest.mark.parametrize(
    "body, field",
    [
        pytest.param({"comment": ""}, "comment", id="empty-comment"),
        pytest.param({}, "comment", id="no-comment"),
        pytest.param({"comment": "c", "transcript_index": -1}, "transcript_index", id="negative"),
        pytest.param({"comment": "c", "transcript_index": 2}, "transcript_index", id="past-end"),
        pytest.param({"comment": "c", "transcript_index": "1"}, "transcript_index", id="string"),
        pytest.param({"comment": "c", "transcript_index": 1.5}, "transcript_index", id="float"),
        pytest.param({"comment": "c", "transcript_index": 10**12}, "transcript_index", id="huge"),
    ],
)
async def test_invalid_feedback_is_422_detail_list(app, client, org, body, field):
    await load(app, org, {"calls": [{"id": CALL, "transcripts": TRANSCRIPT}]})
    response = await client.post(f"/v1/calls/{CALL}/feedback", headers=org.headers, json=body)
    [item] = assert_detail_list(response)
    assert item["loc"] == ["body", field]
    listed = await client.get(f"/v1/calls/{CALL}/feedback", headers=org.headers)
    assert listed.json() == {"feedback": []}


async def test_feedback_routes_on_another_organizations_call_are_404(app, client, org):
    theirs = await make_org(app, "theirs")
    await load(app, theirs, _doc())
    get = await client.get(f"/v1/calls/{CALL}/feedback", headers=org.headers)
    assert assert_detail_message(get, 404) == "Call not found"
    post = await client.post(
        f"/v1/calls/{CALL}/feedback", headers=org.headers, json={"comment": "x"}
    )
    assert assert_detail_message(post, 404) == "Call not found"
    resolve = await client.post(
        f"/v1/feedback/{ENTRY}/resolve", headers=org.headers, json={"resolved": True}
    )
    assert assert_detail_message(resolve, 404) == "Feedback not found"
    listed = await client.get(f"/v1/calls/{CALL}/feedback", headers=theirs.headers)
    assert listed.json()["feedback"][0]["resolved"] is False


async def test_resolve_and_reopen(app, client, org):
    await load(app, org, _doc())
    resolved = await client.post(
        f"/v1/feedback/{ENTRY}/resolve", headers=org.headers, json={"resolved": True}
    )
    assert resolved.status_code == 200
    entry = resolved.json()["feedback"]
    assert resolved.json()["success"] is True and list(entry) == ENTRY_FIELDS
    assert entry["resolved"] is True and entry["resolved_at"].endswith("Z")
    again = await client.post(
        f"/v1/feedback/{ENTRY}/resolve", headers=org.headers, json={"resolved": True}
    )
    # Resolving twice keeps the first resolution time.
    assert again.json()["feedback"]["resolved_at"] == entry["resolved_at"]
    reopened = await client.post(
        f"/v1/feedback/{ENTRY}/resolve", headers=org.headers, json={"resolved": False}
    )
    assert reopened.json()["feedback"]["resolved"] is False
    assert reopened.json()["feedback"]["resolved_at"] is None


@pytest.mark.parametrize("body", [{}, {"resolved": "true"}, {"resolved": 1}, {"resolved": None}])
async def test_invalid_resolve_is_422_detail_list(app, client, org, body):
    await load(app, org, _doc())
    response = await client.post(f"/v1/feedback/{ENTRY}/resolve", headers=org.headers, json=body)
    [item] = assert_detail_list(response)
    assert item["loc"] == ["body", "resolved"]


async def test_feedback_fixture_rejects_a_call_of_another_organization(app, org):
    from callplane.loader import LoadError

    theirs = await make_org(app, "theirs")
    await load(app, theirs, {"calls": [{"id": CALL}]})
    with pytest.raises(LoadError, match=r"feedback\[0\]\.call_id"):
        await load(app, org, {"feedback": [{"call_id": CALL, "comment": "x"}]})
