"""The hostile-input matrix (issue 9): every body route and every body field, on either database.

Each request must be answered in its family's shape, never 5xx, and a refused request must
leave the database exactly as it was (every table's row count, user tables included). The body
routes are discovered from the app (``tests.test_error_shapes``), so a route added later is
covered by the whole-body cases without editing this file; the per-field cases cover the fields
of each route's body listed in ``FIELDS`` (and the fields of its pydantic body model).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, inspect, select, table

from callplane.kit.jsonvalues import MAX_DEPTH
from tests.conftest import client_for
from tests.factories import OrgHandle, load, make_org, runtime_of
from tests.test_error_shapes import CASES, RouteCase, assert_family_shape

CALL_ID = "0b9e1a57-5c2f-4f0e-9a11-7f3b2c1d0e01"
FEEDBACK_ID = "0b9e1a57-5c2f-4f0e-9a11-7f3b2c1d0e02"
NUMBER_ID = "0b9e1a57-5c2f-4f0e-9a11-7f3b2c1d0e03"
AGENT_UUID = "0b9e1a57-5c2f-4f0e-9a11-7f3b2c1d0e04"

DOCUMENT: dict[str, Any] = {
    "agents": [{"id": 1, "uuid": AGENT_UUID, "name": "Ada"}],
    "phone_numbers": [{"id": NUMBER_ID, "number": "+14155550100", "agent_id": 1}],
    "calls": [
        {
            "id": CALL_ID,
            "to_number": "+14155550123",
            "transcripts": [{"role": "user", "text": "hi", "timestamp": 0.5}],
        }
    ],
    "feedback": [{"uuid": FEEDBACK_ID, "call_id": CALL_ID, "comment": "x"}],
    "tables": [
        {
            "name": "t",
            "columns": [
                {"name": "name", "type": "TEXT"},
                {"name": "score", "type": "INTEGER"},
                {"name": "ratio", "type": "FLOAT"},
                {"name": "ok", "type": "BOOLEAN"},
                {"name": "at", "type": "TIMESTAMP"},
                {"name": "doc", "type": "JSON"},
            ],
            "records": [{"name": "first", "score": 1}],
        }
    ],
}

PATHS = {
    "uuid": CALL_ID,
    "id": "1",
    "table_name": "t",
    "phoneNumber": "+14155550123",
}
#: Paths whose {uuid} is not a call.
UUID_OF = {"/v1/feedback/{uuid}": FEEDBACK_ID, "/v1/numbers/{uuid}": NUMBER_ID}

#: A valid body per route (the per-field cases replace one field of it) and its fields.
VALID: dict[str, dict[str, Any]] = {
    "POST /v1/calls": {"to_number": "+14155550123"},
    "POST /v1/calls/{uuid}/feedback": {"comment": "ok"},
    "POST /v1/feedback/{uuid}/resolve": {"resolved": True},
    "POST /v1/feedback/{uuid}/notes": {"note": "ok"},
    "PUT /v1/contacts/{phoneNumber}/data": {"data": {"a": 1}},
    "POST /v1/data/tables": {"name": "u", "columns": [{"name": "c", "type": "TEXT"}]},
    "POST /v1/data/{table_name}": {"records": [{"name": "n"}]},
    "POST /v1/data/{table_name}/query": {"filters": []},
    "PUT /v1/data/{table_name}/{id}": {"name": "n"},
    "PATCH /v1/data/{table_name}/{id}": {"name": "n"},
    "PATCH /v1/numbers/{uuid}": {"friendly_name": "Support"},
    "POST /v1/call_tags": {"name": "vip"},
}
FIELDS: dict[str, list[str]] = {
    "POST /v1/calls": [
        "to_number",
        "from_number",
        "agent_id",
        "voice_id",
        "call_prompt",
        "first_message",
        "language",
        "agent_speaks_first",
        "params",
        "external_identifiers",
        "keyterms",
        "analyzers",
        "tags",
    ],
    "POST /v1/calls/{uuid}/feedback": ["comment", "transcript_index"],
    "POST /v1/feedback/{uuid}/resolve": ["resolved"],
    "POST /v1/feedback/{uuid}/notes": ["note"],
    "PUT /v1/contacts/{phoneNumber}/data": ["data", "ttlSeconds", "expectedRevision"],
    "POST /v1/data/tables": ["name", "columns", "indexes"],
    "POST /v1/data/{table_name}": ["records"],
    "POST /v1/data/{table_name}/query": ["filters", "sort_by", "page", "per_page"],
    "PUT /v1/data/{table_name}/{id}": ["name", "score", "ratio", "ok", "at", "doc"],
    "PATCH /v1/data/{table_name}/{id}": ["name", "score", "ratio", "ok", "at", "doc"],
    "PATCH /v1/numbers/{uuid}": ["friendly_name"],
    "POST /v1/call_tags": ["name", "description", "color", "always_enabled"],
}


def _nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


#: Values that must be refused, or stored and read back exactly (never a 5xx).
HOSTILE_VALUES: dict[str, Any] = {
    "nul": "nul\u0000byte",
    "int-2^64": 2**64,
    "int-below-int64": -(2**63) - 1,
    "huge-int": 10**30,
    "float-1e20": 1e20,
    "float-1e308": 1e308,
    "negative-zero": -0.0,
    "too-deep": _nested(MAX_DEPTH + 5),
    # Longer than every bounded text field (100,000 characters at most); the 2 MB case of the
    # issue has its own test (test_a_2_mb_note_is_refused_in_plain_words).
    "huge-string": "x" * 100_001,
    "object": {"a": {"b": [1, 2]}},
    "list": [1, "two", None],
    "bool": True,
    "null": None,
    "empty-string": "",
    "rtl-and-nbsp": "\u200f+1\u00a0415\u00a0555\u00a00199",
}

#: Raw bodies: the whole-body cases, for every body route the app has.
HOSTILE_BODIES: dict[str, tuple[bytes, dict[str, str]]] = {
    "deep-with-long-digits": (
        b"[" * 1000 + b"1234567890123456789012" + b"]" * 1000,
        {"Content-Type": "application/json"},
    ),
    "deep-1100": (b"{" + b'"a":[' * 1100 + b"]" * 1100 + b"}", {}),
    "no-content-type-object": (b'{"x": 1}', {}),
    "no-content-type-array": (b"[1, 2]", {}),
    "text-plain": (b'{"x": 1}', {"Content-Type": "text/plain"}),
    "form": (b"a=1&b=2", {"Content-Type": "application/x-www-form-urlencoded"}),
    "empty": (b"", {"Content-Type": "application/json"}),
    "whitespace": (b"  \n ", {"Content-Type": "application/json"}),
    "json-null": (b"null", {"Content-Type": "application/json"}),
    "json-string": (b'"text"', {"Content-Type": "application/json"}),
    "escaped-nul": (b'{"name": "a\\u0000b"}', {"Content-Type": "application/json"}),
    "big-int": (b'{"x": 123456789012345678901234}', {"Content-Type": "application/json"}),
    "invalid-utf8": (b'{"name": "\xff\xfe"}', {"Content-Type": "application/json"}),
}


async def _counts(app: FastAPI) -> dict[str, int]:
    """Row count of every table, so 'no write happened' covers tables other parts add (one
    statement for all of them: the matrix takes this snapshot around every request)."""
    async with runtime_of(app).db.session(write=False) as session:
        names = await session.run_sync(
            lambda s: inspect(s.connection()).get_table_names()  # type: ignore[no-any-return]
        )
        names = sorted(name for name in names if name != "alembic_version")
        counts = select(
            *(select(func.count()).select_from(table(n)).scalar_subquery() for n in names)
        )
        row = (await session.execute(counts)).one()
        return dict(zip(names, (int(v) for v in row), strict=True))


def _url(case: RouteCase) -> str:
    url = case.path
    for prefix, value in UUID_OF.items():
        if url.startswith(prefix):
            url = url.replace("{uuid}", value)
    for name, value in PATHS.items():
        url = url.replace("{" + name + "}", value)
    return url


async def _setup(app: FastAPI) -> OrgHandle:
    org = await make_org(app)
    await load(app, org, DOCUMENT)
    return org


#: Every route a body can be sent to (the body policy applies to all of them, also to those
#: that read the body themselves, like contact data, or take none, like cancel).
BODY_ROUTES = [c for c in CASES if c.has_body or c.method in ("POST", "PUT", "PATCH")]


def _check(case: RouteCase, response: httpx.Response) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:300])
    assert response.headers["content-type"].startswith("application/json")
    if response.status_code >= 400:
        assert_family_shape(case, response.json(), validation=response.status_code == 422)


@pytest.mark.parametrize("case", BODY_ROUTES, ids=str)
async def test_hostile_whole_bodies(app, case: RouteCase) -> None:
    org = await _setup(app)
    async with client_for(app) as c:
        before = await _counts(app)
        for name, (raw, headers) in HOSTILE_BODIES.items():
            response = await c.request(
                case.method, _url(case), content=raw, headers={**org.headers, **headers}
            )
            _check(case, response)
            if response.status_code >= 400:
                assert await _counts(app) == before, name
            else:
                before = await _counts(app)  # a write happened: the next snapshot
            reads_body = case.has_body or str(case) in FIELDS
            if reads_body and name not in ("no-content-type-object", "no-content-type-array"):
                assert response.status_code in (404, 409, 422), (name, response.text[:200])
            # The connection and the worker keep serving after any answer.
            assert (await c.get("/healthz")).status_code == 200


FIELD_ROUTES = [c for c in BODY_ROUTES if str(c) in FIELDS]


def test_every_known_body_route_has_its_fields_listed() -> None:
    assert {str(c) for c in BODY_ROUTES} >= set(FIELDS)


@pytest.mark.parametrize("case", FIELD_ROUTES, ids=str)
async def test_hostile_field_values(app, case: RouteCase) -> None:
    org = await _setup(app)
    key = str(case)
    async with client_for(app) as c:
        before = await _counts(app)
        for field in FIELDS[key]:
            for name, value in HOSTILE_VALUES.items():
                body = {**VALID[key], field: value}
                response = await c.request(case.method, _url(case), json=body, headers=org.headers)
                _check(case, response)
                if response.status_code < 400:
                    before = await _counts(app)  # a write happened: the next snapshot
                    continue
                assert await _counts(app) == before, (field, name)
                if response.status_code == 422:
                    _names_the_field(case, response.json(), field, name)


def _names_the_field(case: RouteCase, body: dict[str, Any], field: str, name: str) -> None:
    if case.family.validation_as_detail:
        return  # the item's loc names it
    message = body["errors"][0] if "errors" in body else body["error"]
    assert not message.startswith(("Value error", "Field required")), message
    assert ": " in message or message.startswith("Request body"), (field, name, message)
    head = message.split(": ", 1)[0]
    assert head.count(field) <= 1, message  # named once


async def test_a_refused_write_leaves_no_trace_and_an_accepted_one_reads_back(app) -> None:
    """The worst case of issue 9: params holding 1e20 were stored and then unreadable."""
    org = await _setup(app)
    async with client_for(app) as c:
        params = {"x": 1e20, "y": 1e308, "z": -0.0, "big": 2**63 - 1, "small": -(2**63)}
        created = await c.post(
            "/v1/calls", json={"to_number": "+14155550123", "params": params}, headers=org.headers
        )
        assert created.status_code == 201, created.text
        call_id = created.json()["call_id"]
        read = await c.get(f"/v1/calls/{call_id}", headers=org.headers)
        listed = await c.get("/v1/calls", headers=org.headers)
        found = await c.get(
            "/v1/calls/find_by_attribute",
            params={"param_key": "x", "param_value": "1e+20"},
            headers=org.headers,
        )
    assert read.status_code == listed.status_code == 200
    assert found.status_code in (200, 404)
    stored = read.json()["call"]["params"]
    assert stored == {"x": 1e20, "y": 1e308, "z": 0.0, "big": 2**63 - 1, "small": -(2**63)}
    assert isinstance(stored["x"], float) and isinstance(stored["big"], int)


async def test_a_2_mb_note_is_refused_in_plain_words(app) -> None:
    org = await _setup(app)
    async with client_for(app) as c:
        response = await c.post(
            f"/v1/feedback/{FEEDBACK_ID}/notes", json={"note": "x" * 2_000_000}, headers=org.headers
        )
    assert response.status_code == 422, response.text[:300]
    # Named in plain words: no internal count the client did not send, no echo of the input.
    assert "note" in response.text and "10000" in response.text.replace(",", "")
    assert "2000000" not in response.text and "items" not in response.text, response.text
    assert len(response.text) < 1000


@pytest.mark.parametrize("raw_id", ["%FF", "%FE", "%C0", "%E2%82", "a%FFb"])
async def test_invalid_utf8_in_a_path_is_422(app, raw_id) -> None:
    org = await _setup(app)
    before = await _counts(app)
    async with client_for(app) as c:
        response = await c.put(
            f"/v1/contacts/{raw_id}/data", json={"data": {"a": 1}}, headers=org.headers
        )
        other = await c.get(f"/v1/voices/{raw_id}", headers=org.headers)
    assert response.status_code == 422, response.text
    assert set(response.json()) == {"status", "success", "error", "errors"}
    assert other.status_code in (404, 422)
    assert await _counts(app) == before


@pytest.mark.parametrize(
    "query",
    [
        {"created_after": "0001-01-01T00:00:00+01:00"},
        {"created_before": "9999-12-31T23:59:59-01:00"},
        {"created_after": "x" * 60_000},
        {"status": "x" * 60_000},
        {"page": "9" * 5000},
        {"page_size": "-" + "9" * 400},
    ],
    ids=["after-underflow", "before-overflow", "huge-after", "huge-status", "huge-page", "neg"],
)
async def test_hostile_call_list_queries_are_422(app, query) -> None:
    org = await _setup(app)
    async with client_for(app) as c:
        response = await c.get("/v1/calls", params=query, headers=org.headers)
    assert response.status_code == 422, response.text[:300]
    body = response.json()
    assert set(body) == {"status", "success", "error", "errors"}
    assert body["error"].startswith(next(iter(query)) + ": ")
    assert len(body["error"]) < 200  # the input is never echoed back


@pytest.mark.parametrize(
    "query",
    [{"organization_id": "9999999999"}, {"organization_id": "-9999999999"}],
)
async def test_custom_data_organization_id_filter_beyond_32_bits_is_422(app, query) -> None:
    org = await _setup(app)
    async with client_for(app) as c:
        listed = await c.get("/v1/data/t", params=query, headers=org.headers)
        queried = await c.post(
            "/v1/data/t/query",
            json={"filters": [{"column": "organization_id", "op": "gt", "value": 9999999999}]},
            headers=org.headers,
        )
    assert listed.status_code == 422 and queried.status_code == 422, (listed.text, queried.text)
    assert "organization_id" in listed.json()["error"]


@pytest.mark.parametrize("name", ["xmin", "xmax", "cmin", "cmax", "ctid", "tableoid", "oid"])
async def test_system_column_names_are_422(app, name) -> None:
    org = await _setup(app)
    before = await _counts(app)
    async with client_for(app) as c:
        response = await c.post(
            "/v1/data/tables",
            json={"name": "sys", "columns": [{"name": name, "type": "TEXT"}]},
            headers=org.headers,
        )
    assert response.status_code == 422, response.text
    assert name in response.json()["error"]
    assert await _counts(app) == before
