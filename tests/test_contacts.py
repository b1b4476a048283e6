"""PUT/GET /v1/contacts/{phoneNumber}/data: identifiers, body rules and limits (SPEC PUT
/contacts/{phoneNumber}/data and Limits; docs/api-contract.md#error-shapes,
docs/api-contract.md#contact-data)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import pytest

from callplane.kit.jsonvalues import MAX_DEPTH
from tests.factories import make_org

STATUS_KEYS = {"status", "success", "error", "errors"}


def url(identifier: str, *, encode: bool = True) -> str:
    return f"/v1/contacts/{quote(identifier, safe='') if encode else identifier}/data"


def assert_status_error(response, code: int, *, mentions: str | None = None) -> None:
    assert response.status_code == code, response.text
    body = response.json()
    assert set(body) == STATUS_KEYS
    assert body["status"] == "error" and body["success"] is False
    assert isinstance(body["error"], str) and body["error"]
    assert body["errors"] and all(isinstance(e, str) for e in body["errors"])
    assert body["error"] == body["errors"][0]
    if mentions is not None:
        assert mentions in body["error"], body["error"]


async def test_put_creates_the_contact_and_returns_the_record(app, client):
    org = await make_org(app)
    response = await client.put(
        url("+14155550123"), headers=org.headers, json={"data": {"name": "Dana", "visits": 3}}
    )
    assert response.status_code == 200
    assert response.json() == {
        "phoneNumber": "+14155550123",
        "data": {"name": "Dana", "visits": 3},
        "revision": 1,
        "ttlSeconds": None,
        "expiresAt": None,
    }
    read = await client.get(url("+14155550123"), headers=org.headers)
    assert read.status_code == 200
    assert read.json() == response.json()
    listed = (await client.get("/v1/contacts", headers=org.headers)).json()
    assert [c["phoneNumber"] for c in listed["contacts"]] == ["+14155550123"]


async def test_put_replaces_the_whole_object(app, client):
    org = await make_org(app)
    await client.put(url("+14155550123"), headers=org.headers, json={"data": {"a": 1, "b": 2}})
    response = await client.put(url("+14155550123"), headers=org.headers, json={"data": {"c": 3}})
    assert response.json()["data"] == {"c": 3}
    assert response.json()["revision"] == 2
    read = await client.get(url("+14155550123"), headers=org.headers)
    assert read.json()["data"] == {"c": 3}
    # An empty object is an object: it replaces everything.
    await client.put(url("+14155550123"), headers=org.headers, json={"data": {}})
    assert (await client.get(url("+14155550123"), headers=org.headers)).json()["data"] == {}


async def test_get_of_unknown_identifier_is_404(app, client):
    org = await make_org(app)
    assert_status_error(await client.get(url("+14155550123"), headers=org.headers), 404)


# --- identifiers ------------------------------------------------------------------------------

US_SPELLINGS = [
    "+14155550123",
    "(415) 555-0123",
    "415.555.0123",
    "4155550123",
    "1-415-555-0123",
    "+1 (415) 555-0123",
]


async def test_one_number_written_many_ways_is_one_contact(app, client):
    org = await make_org(app)
    for revision, spelling in enumerate(US_SPELLINGS, start=1):
        response = await client.put(
            url(spelling), headers=org.headers, json={"data": {"spelling": spelling}}
        )
        assert response.status_code == 200, spelling
        assert response.json()["phoneNumber"] == "+14155550123"
        assert response.json()["revision"] == revision
    for spelling in US_SPELLINGS:
        read = await client.get(url(spelling), headers=org.headers)
        assert read.json()["data"] == {"spelling": US_SPELLINGS[-1]}
    listed = (await client.get("/v1/contacts", headers=org.headers)).json()
    assert listed["total_count"] == 1


async def test_plus_may_be_sent_raw_or_url_encoded(app, client):
    org = await make_org(app)
    first = await client.put(
        "/v1/contacts/%2B44%2020%207183%208750/data", headers=org.headers, json={"data": {}}
    )
    assert first.json()["phoneNumber"] == "+442071838750"
    second = await client.put(
        url("+442071838750", encode=False), headers=org.headers, json={"data": {"x": 1}}
    )
    assert second.json() == {**second.json(), "phoneNumber": "+442071838750", "revision": 2}


@pytest.mark.parametrize(
    "identifier",
    [
        pytest.param("sip:alice@example.com", id="sip"),
        pytest.param("whatsapp:+34600123456", id="chat-with-plus"),
        pytest.param("Alice", id="case-kept"),
        pytest.param("  padded  ", id="spaces-kept"),
        pytest.param("José 电话 😀", id="unicode"),
        pytest.param("x' OR '1'='1", id="sql-injection"),
        pytest.param("<img src=x onerror=alert(1)>", id="html"),
        pytest.param("a" * 128, id="128-ascii"),
        pytest.param("é" * 128, id="128-non-ascii"),
        pytest.param("415-555-0123 x12", id="extension-not-a-phone"),
    ],
)
async def test_non_phone_identifiers_are_kept_verbatim(app, client, identifier):
    org = await make_org(app)
    response = await client.put(url(identifier), headers=org.headers, json={"data": {"k": 1}})
    assert response.status_code == 200, response.text
    assert response.json()["phoneNumber"] == identifier
    read = await client.get(url(identifier), headers=org.headers)
    assert read.json()["phoneNumber"] == identifier
    listed = (await client.get("/v1/contacts", headers=org.headers)).json()
    assert [c["phoneNumber"] for c in listed["contacts"]] == [identifier]


async def test_non_phone_identifiers_are_case_sensitive(app, client):
    org = await make_org(app)
    await client.put(url("Alice"), headers=org.headers, json={"data": {"who": "upper"}})
    await client.put(url("alice"), headers=org.headers, json={"data": {"who": "lower"}})
    assert (await client.get(url("Alice"), headers=org.headers)).json()["data"]["who"] == "upper"
    assert (await client.get(url("alice"), headers=org.headers)).json()["data"]["who"] == "lower"


@pytest.mark.parametrize(
    "identifier",
    [
        pytest.param("a" * 129, id="129-ascii"),
        pytest.param("é" * 129, id="129-non-ascii"),
        pytest.param("123", id="too-short-number"),
        pytest.param("911", id="service-number"),
        pytest.param("1" * 40, id="too-long-number"),
        pytest.param("+999 123 4567", id="unknown-country-code"),
        pytest.param("()", id="punctuation-only"),
        pytest.param("+", id="plus-only"),
        pytest.param(" ", id="blank"),
        pytest.param("a\tb", id="tab"),
        pytest.param("a\x00b", id="nul"),
        pytest.param("line\nbreak", id="newline"),
        pytest.param("del\x7f", id="del"),
        pytest.param("\u3000", id="ideographic-space-blank"),
    ],
)
async def test_invalid_identifiers_are_422_naming_the_path(app, client, identifier):
    org = await make_org(app)
    response = await client.put(url(identifier), headers=org.headers, json={"data": {}})
    assert_status_error(response, 422, mentions="phoneNumber")
    assert_status_error(await client.get(url(identifier), headers=org.headers), 422)
    assert_status_error(await client.delete(url(identifier), headers=org.headers), 422)
    listed = (await client.get("/v1/contacts", headers=org.headers)).json()
    assert listed["total_count"] == 0


@pytest.mark.parametrize("path", ["/v1/contacts/a%2Fb/data", "/v1/contacts/..%2F..%2Fx/data"])
async def test_a_slash_cannot_be_part_of_an_identifier(app, client, path):
    org = await make_org(app)
    response = await client.put(path, headers=org.headers, json={"data": {}})
    assert_status_error(response, 404)


# --- body rules -------------------------------------------------------------------------------


def _sized(total_bytes: int, char: str = "x") -> dict[str, str]:
    """An object whose compact UTF-8 JSON is exactly ``total_bytes`` bytes: {"k":"…"}."""
    width = len(char.encode())
    assert (total_bytes - 8) % width == 0
    return {"k": char * ((total_bytes - 8) // width)}


@pytest.mark.parametrize(
    ("size", "char", "accepted"),
    [
        pytest.param(65_536, "x", True, id="65536-ascii"),
        pytest.param(65_537, "x", False, id="65537-ascii"),
        # Non-ASCII counts its UTF-8 bytes, not \u escapes (6 bytes each) nor characters.
        pytest.param(65_536, "é", True, id="65536-two-byte"),
        pytest.param(65_538, "é", False, id="65538-two-byte"),
        pytest.param(65_536, "😀", True, id="65536-four-byte"),
    ],
)
async def test_data_size_limit_is_65536_bytes_of_compact_utf8(app, client, size, char, accepted):
    org = await make_org(app)
    data = _sized(size, char)
    assert len(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()) == size
    response = await client.put(url("+14155550123"), headers=org.headers, json={"data": data})
    if accepted:
        assert response.status_code == 200, response.text
        read = await client.get(url("+14155550123"), headers=org.headers)
        assert read.json()["data"] == data
    else:
        assert_status_error(response, 422, mentions="data")
        assert_status_error(await client.get(url("+14155550123"), headers=org.headers), 404)


async def test_whitespace_in_the_body_does_not_count_toward_the_size(app, client):
    org = await make_org(app)
    data = {f"k{i}": "x" * 600 for i in range(100)}
    data["pad"] = "x" * (65_536 - len(json.dumps(data, separators=(",", ":"))) - 9)
    assert len(json.dumps(data, separators=(",", ":"))) == 65_536
    body = json.dumps({"data": data}, indent=8)
    assert len(body) > 65_536 + 1_000
    response = await client.put(
        url("+14155550123"),
        headers={**org.headers, "Content-Type": "application/json"},
        content=body.encode(),
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"data": []}, id="array"),
        pytest.param({"data": [{"a": 1}]}, id="array-of-objects"),
        pytest.param({"data": "text"}, id="string"),
        pytest.param({"data": 1}, id="number"),
        pytest.param({"data": True}, id="boolean"),
        pytest.param({"data": None}, id="null"),
        pytest.param({"ttlSeconds": 60}, id="missing"),
    ],
)
async def test_data_must_be_an_object(app, client, body):
    org = await make_org(app)
    response = await client.put(url("+14155550123"), headers=org.headers, json=body)
    assert_status_error(response, 422, mentions="data")


@pytest.mark.parametrize(
    ("ttl", "accepted"),
    [
        pytest.param(59, False, id="59"),
        pytest.param(60, True, id="60"),
        pytest.param(7_776_000, True, id="7776000"),
        pytest.param(7_776_001, False, id="7776001"),
        pytest.param(0, False, id="zero"),
        pytest.param(-60, False, id="negative"),
        pytest.param(10**30, False, id="huge"),
        pytest.param(True, False, id="true"),
        pytest.param(False, False, id="false"),
        pytest.param(60.5, False, id="60.5"),
        pytest.param(60.0, True, id="60.0-integral-float"),
        pytest.param("60", False, id="string"),
        pytest.param([60], False, id="array"),
        pytest.param({"s": 60}, False, id="object"),
    ],
)
async def test_ttl_seconds_rules(app, client, ttl, accepted):
    org = await make_org(app)
    before = datetime.now(UTC)
    response = await client.put(
        url("+14155550123"), headers=org.headers, json={"data": {"a": 1}, "ttlSeconds": ttl}
    )
    if not accepted:
        assert_status_error(response, 422, mentions="ttlSeconds")
        assert_status_error(await client.get(url("+14155550123"), headers=org.headers), 404)
        return
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["ttlSeconds"] == int(ttl) and isinstance(body["ttlSeconds"], int)
    expires_at = datetime.fromisoformat(body["expiresAt"])
    assert body["expiresAt"].endswith("Z")
    assert before + timedelta(seconds=ttl) <= expires_at
    assert expires_at <= datetime.now(UTC) + timedelta(seconds=ttl)


async def test_without_ttl_or_with_null_ttl_the_data_does_not_expire(app, client):
    org = await make_org(app)
    for body in ({"data": {}}, {"data": {}, "ttlSeconds": None}):
        response = await client.put(url("+14155550123"), headers=org.headers, json=body)
        assert response.json()["ttlSeconds"] is None and response.json()["expiresAt"] is None


async def test_a_put_without_ttl_removes_a_previous_expiry(app, client):
    org = await make_org(app)
    await client.put(url("+14155550123"), headers=org.headers, json={"data": {}, "ttlSeconds": 60})
    response = await client.put(url("+14155550123"), headers=org.headers, json={"data": {}})
    assert response.json()["expiresAt"] is None
    read = await client.get(url("+14155550123"), headers=org.headers)
    assert read.json()["ttlSeconds"] is None and read.json()["expiresAt"] is None


async def test_unknown_body_fields_are_ignored(app, client):
    org = await make_org(app)
    response = await client.put(
        url("+14155550123"),
        headers=org.headers,
        json={"data": {"a": 1}, "phoneNumber": "+442071838750", "revision": 99, "extra": [1]},
    )
    assert response.status_code == 200
    assert response.json()["phoneNumber"] == "+14155550123"
    assert response.json()["revision"] == 1


async def test_stored_json_comes_back_exactly(app, client):
    org = await make_org(app)
    # Key order, integers beyond 64 bits, escapes, NUL and non-ASCII text survive unchanged.
    raw = (
        '{"data": {"z": 1, "a": {"big": 123456789012345678901234567890, "neg": -0.5},'
        ' "s": "\\u00e9\\u0000\\"quoted\\" 😀", "list": [true, false, null, 1.5e3]}}'
    )
    response = await client.put(
        url("+14155550123"),
        headers={**org.headers, "Content-Type": "application/json"},
        content=raw.encode(),
    )
    assert response.status_code == 200, response.text
    read = await client.get(url("+14155550123"), headers=org.headers)
    expected = json.loads(raw)["data"]
    assert read.json()["data"] == expected
    assert list(read.json()["data"]) == ["z", "a", "s", "list"]
    assert read.json()["data"]["a"]["big"] == 123456789012345678901234567890


async def test_deeply_nested_data_within_limits_is_stored(app, client):
    """One nesting limit for every JSON body (callplane.kit.jsonvalues.MAX_DEPTH): the body itself
    is the first level, so data may hold 63 more."""
    org = await make_org(app)
    data: dict[str, object] = {"leaf": 1}
    for _ in range(MAX_DEPTH - 2):
        data = {"n": data}
    response = await client.put(url("sip:deep"), headers=org.headers, json={"data": data})
    assert response.status_code == 200, response.text
    assert (await client.get(url("sip:deep"), headers=org.headers)).json()["data"] == data
    deeper = await client.put(url("sip:deep"), headers=org.headers, json={"data": {"n": data}})
    assert deeper.status_code == 422
    assert deeper.json()["error"] == f"data: is nested more than {MAX_DEPTH} levels deep"


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"{bad json", id="malformed"),
        pytest.param(b"", id="empty"),
        pytest.param(b'{"data": {"a": NaN}}', id="nan"),
        pytest.param(b'{"data": {"a": Infinity}}', id="infinity"),
        pytest.param(b'{"data": {"a": 1e400}}', id="float-overflow"),
        pytest.param(b'{"data": {"s": "\\ud800"}}', id="lone-surrogate"),
        pytest.param(b'{"data": {"s": "\xff\xfe"}}', id="invalid-utf8"),
        pytest.param(b'{"data":' + b"[" * 100_000 + b"]" * 100_000 + b"}", id="nesting-bomb"),
        pytest.param(b"[]", id="array-body"),
        pytest.param(b'"text"', id="string-body"),
        pytest.param(b"null", id="null-body"),
    ],
)
async def test_bad_bodies_are_422_in_the_status_shape(app, client, raw):
    org = await make_org(app)
    response = await client.put(
        url("+14155550123"),
        headers={**org.headers, "Content-Type": "application/json"},
        content=raw,
    )
    assert_status_error(response, 422)
    assert_status_error(await client.get(url("+14155550123"), headers=org.headers), 404)


async def test_a_body_that_is_not_json_is_422(app, client):
    org = await make_org(app)
    response = await client.put(
        url("+14155550123"), headers=org.headers, data={"data": "x"}
    )  # form-encoded
    assert_status_error(response, 422)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PUT", "/v1/contacts/+14155550123/data"),
        ("GET", "/v1/contacts/+14155550123/data"),
        ("DELETE", "/v1/contacts/+14155550123/data"),
        ("GET", "/v1/contacts"),
    ],
)
@pytest.mark.parametrize("auth", [None, "Bearer cp_unknown", "Basic dXNlcjpwYXNz"])
async def test_authentication_failures_are_401_in_the_status_shape(app, client, method, path, auth):
    await make_org(app)
    headers = {"Authorization": auth} if auth else {}
    # Invalid bodies and identifiers do not reveal anything before authentication.
    response = await client.request(method, path, headers=headers, json={"data": []})
    assert_status_error(response, 401)
    assert response.headers["WWW-Authenticate"] == "Bearer"


async def test_openapi_documents_the_contact_routes(client):
    spec = (await client.get("/v1/openapi.json")).json()
    item = spec["paths"]["/v1/contacts/{phoneNumber}/data"]
    assert set(item) >= {"put", "get", "delete"}
    put = item["put"]
    body_schema = put["requestBody"]["content"]["application/json"]["schema"]
    assert body_schema["required"] == ["data"]
    assert set(body_schema["properties"]) == {"data", "ttlSeconds", "expectedRevision"}
    assert {"200", "401", "409", "422", "429"} <= set(put["responses"])
    assert "/v1/contacts" in spec["paths"]
