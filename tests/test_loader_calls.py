"""The calls section of the fixture document, pinned row by row.

The expectations below are what the per-row ORM loader stored (captured before the section moved
to bulk inserts on the driver connection), so the bulk path is held to the same rows, ids,
timestamps, attribute index entries and tag links, on both databases. On SQLite the stored text
of uuids and timestamps is pinned too: queries compare against it.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Table, cast, select
from sqlalchemy.types import Text

from callplane.loader import LoadError
from callplane.models.calls import Call, CallAttribute, CallTagLink
from tests.factories import load, make_org, runtime_of

AGENT = "7a1c0f4e-8d52-4c1b-9e36-2f0a5b7c9d11"
VOICE = "0b7d6f3a-2c1e-4f5a-9b8c-7d6e5f4a3b01"
TAG_A = "3c2b1a09-8f7e-4d6c-9b5a-4f3e2d1c0b0a"
TAG_B = "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"
FULL = "11111111-2222-4333-8444-555555555555"
BARE = "66666666-7777-4888-9999-aaaaaaaaaaaa"

DOCUMENT: dict[str, Any] = {
    "agents": [{"id": 7, "uuid": AGENT, "name": "a"}],
    "voices": [{"id": VOICE, "name": "v"}],
    "call_tags": [{"id": TAG_A, "name": "a"}, {"id": TAG_B, "name": "b"}],
    "calls": [
        {
            "id": FULL,
            "simple_uuid": "abcdefab-cdef-4abc-8def-abcdefabcdef",
            "from_number": "+14155550100",
            "to_number": "2125550199",
            "status": "completed",
            "started_at": "2025-03-01T10:00:05.250+02:00",
            "ended_at": "2025-03-01T08:01:00Z",
            "duration": 55,
            "created_at": "2025-03-01T08:00:00.000001Z",
            "updated_at": "2025-03-02T00:00:00",
            "transcripts": [
                {"role": "assistant", "text": "Hi", "timestamp": 0.5},
                {"function_name": "lookup", "arguments": {"q": [1, 2.5, None]}},
            ],
            "screen_pop_token": "tok",
            "call_prompt": "Be kind",
            "answered_by": "human",
            "language": "en",
            "transferred": True,
            "handoff_metadata": {"to": "desk", "n": 2},
            "direction": "outbound",
            "tags": [TAG_B, TAG_A, TAG_B],
            "voice_id": VOICE,
            "agent_speaks_first": False,
            "agent_id": AGENT,
            "agent_branch": "main",
            "agent_commit_id": "c0ffee",
            "agent_branch_name": "Main",
            "external_identifiers": {"crm": "X-1", "n": 12, "obj": {"a": 1}},
            "params": {"s": "v", "i": -3, "f": 1.5, "t": True, "f0": False, "z": None, "l": [1]},
            "cart": {"items": []},
            "analyzers": [{"prompt": "p"}],
            "analysis_results": [{"id": FULL, "result": {"ok": True}, "extra": "kept"}],
            "summary": "done",
            "keyterms": ["refund", "order"],
            "first_message": "Hello",
        },
        {"id": BARE, "created_at": "2024-12-31T23:59:59"},
    ],
}

#: Typed columns as read back through SQLAlchemy, per table, in primary-key order
#: (organization_id left out); the bare call's simple_uuid is generated.
#: On SQLite, also the stored text of the uuid and timestamp columns (queries compare against
#: it), and for both which nullable JSON columns hold SQL NULL rather than JSON null.
EXPECTED_CALLS: list[dict[str, Any]] = [
    {
        "id": "11111111-2222-4333-8444-555555555555",
        "simple_uuid": "abcdefab-cdef-4abc-8def-abcdefabcdef",
        "from_number": "+14155550100",
        "to_number": "2125550199",
        "status": "completed",
        "started_at": "2025-03-01 08:00:05.250000+00:00",
        "ended_at": "2025-03-01 08:01:00+00:00",
        "duration": 55,
        "transcripts": [
            {"text": "Hi", "role": "assistant", "timestamp": 0.5},
            {"function_name": "lookup", "arguments": {"q": [1, 2.5, None]}},
        ],
        "screen_pop_token": "tok",
        "call_prompt": "Be kind",
        "answered_by": "human",
        "language": "en",
        "transferred": True,
        "handoff_metadata": {"to": "desk", "n": 2},
        "direction": "outbound",
        "voice_uuid": "0b7d6f3a-2c1e-4f5a-9b8c-7d6e5f4a3b01",
        "agent_speaks_first": False,
        "agent_uuid": "7a1c0f4e-8d52-4c1b-9e36-2f0a5b7c9d11",
        "agent_branch": "main",
        "agent_commit_id": "c0ffee",
        "agent_branch_name": "Main",
        "campaign_id": None,
        "external_identifiers": {"crm": "X-1", "n": 12, "obj": {"a": 1}},
        "params": {"s": "v", "i": -3, "f": 1.5, "t": True, "f0": False, "z": None, "l": [1]},
        "cart": {"items": []},
        "analyzers": [{"prompt": "p"}],
        "analysis_results": [
            {"id": "11111111-2222-4333-8444-555555555555", "result": {"ok": True}, "extra": "kept"}
        ],
        "summary": "done",
        "transcript_deleted_at": None,
        "redactions": None,
        "keyterms": ["refund", "order"],
        "first_message": "Hello",
        "simulate": None,
        "worker_id": None,
        "lease_expires_at": None,
        "event_sequence": 0,
        "created_at": "2025-03-01 08:00:00.000001+00:00",
        "updated_at": "2025-03-02 00:00:00+00:00",
    },
    {
        "id": "66666666-7777-4888-9999-aaaaaaaaaaaa",
        "simple_uuid": "GENERATED",
        "from_number": None,
        "to_number": None,
        "status": "enqueued",
        "started_at": None,
        "ended_at": None,
        "duration": None,
        "transcripts": [],
        "screen_pop_token": None,
        "call_prompt": None,
        "answered_by": None,
        "language": None,
        "transferred": False,
        "handoff_metadata": None,
        "direction": None,
        "voice_uuid": None,
        "agent_speaks_first": None,
        "agent_uuid": None,
        "agent_branch": None,
        "agent_commit_id": None,
        "agent_branch_name": None,
        "campaign_id": None,
        "external_identifiers": {},
        "params": {},
        "cart": None,
        "analyzers": [],
        "analysis_results": [],
        "summary": None,
        "transcript_deleted_at": None,
        "redactions": None,
        "keyterms": [],
        "first_message": None,
        "simulate": None,
        "worker_id": None,
        "lease_expires_at": None,
        "event_sequence": 0,
        "created_at": "2024-12-31 23:59:59+00:00",
        "updated_at": "2024-12-31 23:59:59+00:00",
    },
]
EXPECTED_LINKS: list[dict[str, Any]] = [
    {
        "call_uuid": "11111111-2222-4333-8444-555555555555",
        "tag_uuid": "3c2b1a09-8f7e-4d6c-9b5a-4f3e2d1c0b0a",
        "position": 1,
    },
    {
        "call_uuid": "11111111-2222-4333-8444-555555555555",
        "tag_uuid": "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a",
        "position": 0,
    },
]
EXPECTED_ATTRIBUTES: list[dict[str, Any]] = [
    {
        "call_uuid": "11111111-2222-4333-8444-555555555555",
        "source": "external",
        "key_digest": "1b16b1df538ba12dc3f97edbb85caa7050d46c148134290feba80f8236c83db9",
        "value_digest": "6b51d431df5d7f141cbececcf79edf3dd861c3b4069f0b11661a3eefacbba918",
        "created_at": "2025-03-01 08:00:00.000001+00:00",
    },
    {
        "call_uuid": "11111111-2222-4333-8444-555555555555",
        "source": "external",
        "key_digest": "9261ceef0b969e70ac20f1510f07a1e0d8db05f20c75161a2ef43b4eba27a7aa",
        "value_digest": "9cc37f46ccca5912974ac8abef858e060b7c5b3df5617b99bcc45d3ef94cc116",
        "created_at": "2025-03-01 08:00:00.000001+00:00",
    },
    {
        "call_uuid": "11111111-2222-4333-8444-555555555555",
        "source": "param",
        "key_digest": "043a718774c572bd8a25adbeb1bfcd5c0256ae11cecf9f9c3f925d0e52beaf89",
        "value_digest": "4c94485e0c21ae6c41ce1dfe7b6bfaceea5ab68e40a2476f50208e526f506080",
        "created_at": "2025-03-01 08:00:00.000001+00:00",
    },
    {
        "call_uuid": "11111111-2222-4333-8444-555555555555",
        "source": "param",
        "key_digest": "252f10c83610ebca1a059c0bae8255eba2f95be4d1d7bcfa89d7248a82d9f111",
        "value_digest": "9f29a130438b81170b92a42650f9a94291ecad60bd47af2a3886e75f7f728725",
        "created_at": "2025-03-01 08:00:00.000001+00:00",
    },
    {
        "call_uuid": "11111111-2222-4333-8444-555555555555",
        "source": "param",
        "key_digest": "865ab0d317f36965e43d20d275b545a6773137adad19db1d61ecb8032f473e0b",
        "value_digest": "fcbcf165908dd18a9e49f7ff27810176db8e9f63b4352213741664245224f8aa",
        "created_at": "2025-03-01 08:00:00.000001+00:00",
    },
    {
        "call_uuid": "11111111-2222-4333-8444-555555555555",
        "source": "param",
        "key_digest": "de7d1b721a1e0632b7cf04edf5032c8ecffa9f9a08492152b926f1a5a7e765d7",
        "value_digest": "615bdd17c2556f82f384392ea8557f8cc88b03501c759e23093ab0b2a9b5cd48",
        "created_at": "2025-03-01 08:00:00.000001+00:00",
    },
    {
        "call_uuid": "11111111-2222-4333-8444-555555555555",
        "source": "param",
        "key_digest": "e3b98a4da31a127d4bde6e43033f66ba274cab0eb7eb1c70ec41402bf6273dd8",
        "value_digest": "b5bea41b6c623f7c09f1bf24dcae58ebab3c0cdd90ad966bc43a45b44867e12b",
        "created_at": "2025-03-01 08:00:00.000001+00:00",
    },
]
EXPECTED_SQLITE_TEXT: list[dict[str, Any]] = [
    {
        "text_id": "11111111222243338444555555555555",
        "text_simple_uuid": "abcdefabcdef4abc8defabcdefabcdef",
        "text_started_at": "2025-03-01 08:00:05.250000",
        "text_voice_uuid": "0b7d6f3a2c1e4f5a9b8c7d6e5f4a3b01",
        "text_created_at": "2025-03-01 08:00:00.000001",
    },
    {
        "text_id": "66666666777748889999aaaaaaaaaaaa",
        "text_simple_uuid": "GENERATED",
        "text_started_at": None,
        "text_voice_uuid": None,
        "text_created_at": "2024-12-31 23:59:59.000000",
    },
]
EXPECTED_NULLS: list[dict[str, Any]] = [
    {
        "id": "11111111-2222-4333-8444-555555555555",
        "null_handoff_metadata": False,
        "null_cart": False,
    },
    {
        "id": "66666666-7777-4888-9999-aaaaaaaaaaaa",
        "null_handoff_metadata": False,
        "null_cart": False,
    },
]


def _plain(value: Any) -> Any:
    if isinstance(value, uuid.UUID | datetime):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    return value


async def _rows(app: Any, org_id: int, table: Table, *extra: Any) -> list[dict[str, Any]]:
    key = [c for c in table.primary_key.columns]
    query = select(*table.columns, *extra).where(table.c.organization_id == org_id).order_by(*key)
    async with runtime_of(app).db.session(write=False) as session:
        result = await session.execute(query)
        rows = [{k: _plain(v) for k, v in row.items()} for row in result.mappings()]
    for row in rows:
        row.pop("organization_id")
    return rows


async def _stored(app: Any, org_id: int) -> dict[str, list[dict[str, Any]]]:
    calls = Call.__table__
    json_columns = [
        c for c in calls.columns if c.nullable and c.name in ("handoff_metadata", "cart")
    ]
    stored = {
        "calls": await _rows(app, org_id, calls),
        "links": await _rows(app, org_id, CallTagLink.__table__),
        "attributes": await _rows(app, org_id, CallAttribute.__table__),
        "nulls": [
            {k: v for k, v in row.items() if k.startswith("null_") or k == "id"}
            for row in await _rows(
                app, org_id, calls, *(c.is_(None).label(f"null_{c.name}") for c in json_columns)
            )
        ],
    }
    if runtime_of(app).db.backend == "sqlite":
        texts = [
            cast(c, Text).label(f"text_{c.name}")
            for c in calls.columns
            if c.name in ("id", "simple_uuid", "voice_uuid", "started_at", "created_at")
        ]
        stored["sqlite_text"] = [
            {k: v for k, v in row.items() if k.startswith("text_")}
            for row in await _rows(app, org_id, calls, *texts)
        ]
    return stored


async def test_calls_are_stored_as_the_per_row_loader_stored_them(app):
    org = await make_org(app)
    created = await load(app, org, DOCUMENT)
    assert created["calls"] == [FULL, BARE]
    stored = await _stored(app, org.id)
    bare_simple_uuid = stored["calls"][1]["simple_uuid"]
    assert uuid.UUID(bare_simple_uuid).version == 4
    stored["calls"][1]["simple_uuid"] = "GENERATED"
    assert stored["calls"] == EXPECTED_CALLS
    assert stored["links"] == EXPECTED_LINKS
    assert stored["attributes"] == EXPECTED_ATTRIBUTES
    assert stored["nulls"] == EXPECTED_NULLS
    if "sqlite_text" in stored:
        assert stored["sqlite_text"][1].pop("text_simple_uuid") == uuid.UUID(bare_simple_uuid).hex
        assert stored["sqlite_text"] == [
            EXPECTED_SQLITE_TEXT[0],
            {k: v for k, v in EXPECTED_SQLITE_TEXT[1].items() if k != "text_simple_uuid"},
        ]


async def test_generated_ids_and_timestamps(app):
    org = await make_org(app)
    before = datetime.now(UTC)
    created = await load(app, org, {"calls": [{}, {"status": "busy"}]})
    after = datetime.now(UTC)
    rows = (await _stored(app, org.id))["calls"]
    assert sorted(created["calls"]) == [row["id"] for row in rows]
    for row in rows:
        assert row["id"] != row["simple_uuid"]
        uuid.UUID(row["simple_uuid"])
        created_at = datetime.fromisoformat(row["created_at"])
        assert before - timedelta(seconds=1) <= created_at <= after
        assert row["updated_at"] == row["created_at"]


@pytest.mark.parametrize(
    "calls, message",
    [
        ([{}, {"agent_id": VOICE}], "calls[1].agent_id: no such agent"),
        ([{"voice_id": AGENT}], "calls[0].voice_id: no such voice"),
        ([{"tags": [TAG_A, VOICE]}], f"calls[0].tags: no such call tag {VOICE}"),
        ([{"agent_id": VOICE}, {"status": "ringing"}], "calls[1].status: Input should be"),
        ([{"id": FULL}, {"agent_id": VOICE}, {"id": FULL}], "calls[1].agent_id: no such agent"),
        ([{"id": FULL}, {"id": FULL}, {"agent_id": VOICE}], "calls: conflicts with existing data"),
    ],
    ids=["agent", "voice", "tag", "invalid-item-first", "reference-before-duplicate", "duplicate"],
)
async def test_the_first_bad_item_is_named(app, calls, message):
    org = await make_org(app)
    document = {key: DOCUMENT[key] for key in ("agents", "voices", "call_tags")}
    with pytest.raises(LoadError) as error:
        await load(app, org, {**document, "calls": calls})
    assert error.value.message.startswith(message)
    assert (await _stored(app, org.id))["calls"] == []


@pytest.fixture(params=["worker", "in_process"])
def small_chunks(monkeypatch, request):
    """Chunks of two items: the chunk logic on tiny input, with the chunks prepared by a worker
    process (as for a large import) and in this process."""
    from callplane.calls import fixtures

    monkeypatch.setattr(fixtures, "CHUNK", 2)
    monkeypatch.setattr(fixtures, "IN_WORKER_FROM", 1 if request.param == "worker" else 10**9)


async def test_calls_across_chunks_keep_document_order(app, small_chunks):
    org = await make_org(app)
    calls = [
        {"created_at": f"2025-01-0{n + 1}T00:00:00Z", "params": {"n": n}, "tags": [TAG_A]}
        for n in range(5)
    ]
    document = {key: DOCUMENT[key] for key in ("agents", "voices", "call_tags")}
    created = await load(app, org, {**document, "calls": calls})
    stored = await _stored(app, org.id)
    by_id = {row["id"]: row for row in stored["calls"]}
    assert [by_id[i]["params"] for i in created["calls"]] == [{"n": n} for n in range(5)]
    assert len(stored["attributes"]) == 5 and len(stored["links"]) == 5


@pytest.mark.parametrize(
    "calls, message",
    [
        ([{"id": FULL}, {}, {"id": FULL}, {"agent_id": VOICE}], "calls: conflicts with"),
        ([{"id": FULL}, {}, {"agent_id": VOICE}, {}, {"id": FULL}], "calls[2].agent_id"),
        ([{"agent_id": VOICE}, {}, {}, {"status": "x"}], "calls[3].status"),
        ([{"id": FULL}, {}, {"id": FULL}, {}, {"status": "x"}], "calls[4].status"),
    ],
    ids=["conflict-before-reference", "reference-before-conflict", "invalid-last", "invalid-late"],
)
async def test_the_first_bad_item_is_named_across_chunks(app, small_chunks, calls, message):
    org = await make_org(app)
    with pytest.raises(LoadError) as error:
        await load(app, org, {"calls": calls})
    assert error.value.message.startswith(message)
    assert (await _stored(app, org.id))["calls"] == []


def test_the_bulk_tables_have_no_column_defaults_in_the_database():
    # On SQLite a bulk row leaves its NULL columns out (BulkInsert.batch): a default in the
    # database would then be stored instead of the NULL.
    from callplane.calls.fixtures import _TABLES

    assert [c for table in _TABLES for c in table.columns if c.server_default is not None] == []


# The JSON value policy: the calls section's items are screened where they are prepared (the
# workers), the rest of the document up front, with the precedence of one screen of the whole
# document before anything else: its first violation is the error, whatever else is wrong.


@pytest.mark.parametrize(
    "document, message",
    [
        (
            {"calls": [{"status": "x"}, {}, {}, {"params": {"a": "\u0000"}}]},
            "calls[3].params.a: must not contain NUL characters",
        ),
        (
            {"voices": [{"name": ""}], "calls": [{}, {}, {"params": {"a": "\u0000"}}]},
            "calls[2].params.a: must not contain NUL characters",
        ),
        (
            {"calls": [{}, {}, {"params": {"a": "\u0000"}}], "voices": [{"name": "\u0000"}]},
            "calls[2].params.a: must not contain NUL characters",
        ),
        (
            {"voices": [{"name": "\u0000"}], "calls": [{}, {}, {"params": {"a": "\u0000"}}]},
            "voices[0].name: must not contain NUL characters",
        ),
        (
            {"calls": [{"id": FULL}, {}, {"id": FULL}, {}, {"cart": {"x": "\ud800"}}]},
            "calls[4].cart.x: must be valid Unicode text",
        ),
    ],
    ids=[
        "over-an-invalid-item",
        "over-an-earlier-section",
        "first-in-document",
        "first-section",
        "over-a-conflict",
    ],
)
async def test_the_first_violation_of_the_value_policy_is_the_error(
    app, small_chunks, document, message
):
    org = await make_org(app)
    with pytest.raises(LoadError) as error:
        await load(app, org, document)
    assert error.value.message == message
    assert (await _stored(app, org.id))["calls"] == []


async def test_a_negative_zero_is_stored_as_zero_from_any_chunk(app, small_chunks):
    org = await make_org(app)
    await load(app, org, {"calls": [{}, {}, {"id": FULL, "params": {"z": -0.0, "n": [-0.0]}}]})
    stored = {row["id"]: row for row in (await _stored(app, org.id))["calls"]}
    assert stored[FULL]["params"] == {"z": 0.0, "n": [0.0]}
    assert str(stored[FULL]["params"]["z"]) == "0.0"


@pytest.mark.parametrize("levels", [58, 59, 60, 61])
async def test_the_depth_limit_counts_from_the_document(app, small_chunks, levels):
    from callplane.errors import InvalidInput
    from callplane.kit.jsonvalues import check_value

    nested: dict[str, Any] = {}
    for _ in range(levels):
        nested = {"n": nested}
    document = {"calls": [{}, {}, {"params": {"deep": nested}}]}
    try:
        check_value(document)
        expected = None
    except InvalidInput as exc:
        expected = f"calls: {exc.message}"
    org = await make_org(app)
    if expected is None:
        assert len((await load(app, org, document))["calls"]) == 3
    else:
        with pytest.raises(LoadError) as error:
            await load(app, org, document)
        assert error.value.message == expected


HOSTILE_TEXT = "tab\there\nnew line\\N back\\slash\r\n \\x00ff ünï 🎉 \\\\N"


async def test_text_that_copy_would_read_as_markup_is_stored_as_written(app, small_chunks):
    # PostgreSQL's rows travel as COPY's text format: tabs, newlines, backslashes and a literal
    # "\N" (its NULL) in text and JSON columns must come back as they were sent.
    org = await make_org(app)
    item = {
        "id": FULL,
        "summary": HOSTILE_TEXT,
        "from_number": "\\N",
        "params": {HOSTILE_TEXT: HOSTILE_TEXT},
        "transcripts": [{"role": "user", "text": HOSTILE_TEXT}],
    }
    await load(app, org, {"calls": [{}, {}, item]})
    stored = {row["id"]: row for row in (await _stored(app, org.id))["calls"]}[FULL]
    assert stored["summary"] == HOSTILE_TEXT
    assert stored["from_number"] == "\\N"
    assert stored["params"] == {HOSTILE_TEXT: HOSTILE_TEXT}
    assert stored["transcripts"] == [{"role": "user", "text": HOSTILE_TEXT}]
