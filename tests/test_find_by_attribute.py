"""GET /v1/calls/find_by_attribute: every rule of SPEC and docs/api-contract.md#find-by-attribute,
in the find family's shape."""

from __future__ import annotations

import pytest

from tests.factories import load, make_org
from tests.test_calls_helpers import AGENT_UUID, BASICS, CALL_FIELDS, assert_find_error, stamp

URL = "/v1/calls/find_by_attribute"


def _call(n: int, params=None, external=None, **extra):
    return {
        "id": f"00000000-0000-4000-8000-{n:012d}",
        "created_at": stamp(n),
        "params": params or {},
        "external_identifiers": external or {},
        **extra,
    }


def _id(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


async def _find(client, org, **query):
    return await client.get(URL, params=query, headers=org.headers)


async def _found_id(client, org, **query) -> str:
    response = await _find(client, org, **query)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["success"] is True
    call_id: str = body["call"]["id"]
    return call_id


@pytest.fixture
async def org(app):
    return await make_org(app)


# Rule 1 ------------------------------------------------------------------------------------


async def test_matching_is_case_sensitive_for_keys_and_values(app, client, org):
    await load(app, org, {"calls": [_call(1, {"Order": "AbC"})]})
    assert await _found_id(client, org, param_key="Order", param_value="AbC") == _id(1)
    for key, value in (("order", "AbC"), ("Order", "abc"), ("ORDER", "ABC")):
        assert_find_error(await _find(client, org, param_key=key, param_value=value), 404)


# Rule 2 and "most recent" (docs/api-contract.md) --------------------------------------------------


async def test_only_the_most_recent_match_is_returned(app, client, org):
    await load(
        app,
        org,
        {"calls": [_call(1, {"k": "v"}), _call(3, {"k": "v"}), _call(2, {"k": "v"})]},
    )
    assert await _found_id(client, org, param_key="k", param_value="v") == _id(3)


async def test_ties_on_created_at_are_broken_by_the_greatest_id(app, client, org):
    same = stamp(5)
    low, high = _call(1, {"k": "v"}), _call(2, {"k": "v"})
    low["created_at"] = high["created_at"] = same
    await load(app, org, {"calls": [high, low]})
    assert await _found_id(client, org, param_key="k", param_value="v") == _id(2)


# Rules 3, 4 -------------------------------------------------------------------------------


async def test_fields_projection_holds_exactly_the_requested_fields(app, client, org):
    await load(
        app,
        org,
        {
            **BASICS,
            "calls": [
                _call(
                    1,
                    {"order": "A-1", "n": 7},
                    summary="Booked",
                    status="completed",
                    duration=42,
                    transferred=True,
                    agent_id=AGENT_UUID,
                    agent_commit_id="c0ffee",
                    screen_pop_token="spt",
                )
            ],
        },
    )
    response = await _find(
        client,
        org,
        param_key="order",
        param_value="A-1",
        fields="id,summary,status,duration,transferred,agent_id,agent_commit_id,"
        "screen_pop_token,params.order,params.n,params.absent",
    )
    assert response.status_code == 200
    assert response.json() == {
        "success": True,
        "call": {
            "id": _id(1),
            "summary": "Booked",
            "status": "completed",
            "duration": 42,
            "transferred": True,
            "agent_id": AGENT_UUID,
            "agent_commit_id": "c0ffee",
            "screen_pop_token": "spt",
            "params": {"order": "A-1", "n": 7, "absent": None},
        },
    }


async def test_requested_fields_without_a_value_are_null(app, client, org):
    await load(app, org, {"calls": [_call(1, {"k": "v"})]})
    response = await _find(
        client, org, param_key="k", param_value="v", fields="summary,duration,params.nope"
    )
    assert response.json()["call"] == {"summary": None, "duration": None, "params": {"nope": None}}


async def test_fields_are_trimmed_and_empty_items_and_duplicates_ignored(app, client, org):
    await load(app, org, {"calls": [_call(1, {"k": "v"}, status="busy")]})
    response = await _find(
        client, org, param_key="k", param_value="v", fields=" status ,,id, status,"
    )
    assert response.json()["call"] == {"status": "busy", "id": _id(1)}


async def test_params_key_may_contain_dots(app, client, org):
    await load(app, org, {"calls": [_call(1, {"k": "v", "a.b": 1})]})
    response = await _find(client, org, param_key="k", param_value="v", fields="params.a.b")
    assert response.json()["call"] == {"params": {"a.b": 1}}


# Rule 5 and the limits of docs/api-contract.md ----------------------------------------------------


@pytest.mark.parametrize(
    "fields, named",
    [
        pytest.param("id,transcripts", "transcripts", id="full-only-field"),
        pytest.param("ID", "ID", id="case"),
        pytest.param("params.", "params.", id="params-without-key"),
        pytest.param("params", "params", id="bare-params"),
        pytest.param("id;DROP TABLE calls", "id;DROP TABLE calls", id="injection"),
    ],
)
async def test_unsupported_field_is_422_naming_fields_and_the_name(app, client, org, fields, named):
    await load(app, org, {"calls": [_call(1, {"k": "v"})]})
    errors = assert_find_error(
        await _find(client, org, param_key="k", param_value="v", fields=fields), 422
    )
    assert "fields" in errors[0] and named in errors[0]


async def test_more_than_50_fields_is_422(app, client, org):
    await load(app, org, {"calls": [_call(1, {"k": "v"})]})
    fifty = ",".join(f"params.p{i}" for i in range(50))
    ok = await _find(client, org, param_key="k", param_value="v", fields=fifty)
    assert ok.status_code == 200 and len(ok.json()["call"]["params"]) == 50
    errors = assert_find_error(
        await _find(client, org, param_key="k", param_value="v", fields=fifty + ",id"), 422
    )
    assert "fields" in errors[0] and "50" in errors[0]
    # Duplicates are counted once.
    dupes = ",".join(["id"] * 60)
    assert (
        await _find(client, org, param_key="k", param_value="v", fields=dupes)
    ).status_code == 200


async def test_fields_longer_than_1000_characters_is_422(app, client, org):
    await load(app, org, {"calls": [_call(1, {"k": "v"})]})
    exactly = "id," + "," * 995 + "id"
    assert len(exactly) == 1000
    ok = await _find(client, org, param_key="k", param_value="v", fields=exactly)
    assert ok.status_code == 200
    errors = assert_find_error(
        await _find(client, org, param_key="k", param_value="v", fields=exactly + ","), 422
    )
    assert "fields" in errors[0] and "1000" in errors[0]


# Rule 6 -----------------------------------------------------------------------------------


async def test_without_fields_the_full_call_is_returned(app, client, org):
    await load(
        app, org, {**BASICS, "calls": [_call(1, {"k": "v"}, tags=[BASICS["call_tags"][0]["id"]])]}
    )
    response = await _find(client, org, param_key="k", param_value="v")
    call = response.json()["call"]
    assert list(call) == CALL_FIELDS
    full = await client.get(f"/v1/calls/{_id(1)}", headers=org.headers)
    assert call == full.json()["call"]


# Rule 7 and the pairs of docs/api-contract.md -----------------------------------------------------


async def test_no_search_pair_is_422(app, client, org):
    assert_find_error(await _find(client, org), 422)
    assert_find_error(await _find(client, org, fields="id"), 422)


async def test_no_match_is_404(app, client, org):
    await load(app, org, {"calls": [_call(1, {"k": "v"})]})
    assert_find_error(await _find(client, org, param_key="k", param_value="w"), 404)
    assert_find_error(await _find(client, org, param_key="x", param_value="v"), 404)


@pytest.mark.parametrize(
    "query, named",
    [
        ({"param_key": "k"}, "param_value"),
        ({"param_value": "v"}, "param_key"),
        ({"external_identifier_key": "k"}, "external_identifier_value"),
        ({"external_identifier_value": "v"}, "external_identifier_key"),
        (
            {"param_key": "k", "param_value": "v", "external_identifier_key": "e"},
            "external_identifier_value",
        ),
        ({"param_key": "", "param_value": "v"}, "param_key"),
        (
            {"external_identifier_key": "", "external_identifier_value": "v"},
            "external_identifier_key",
        ),
    ],
)
async def test_half_pairs_and_empty_keys_are_422(app, client, org, query, named):
    await load(app, org, {"calls": [_call(1, {"k": "v"}, {"k": "v"})]})
    errors = assert_find_error(await _find(client, org, **query), 422)
    assert named in errors[0]


async def test_both_pairs_must_both_match(app, client, org):
    await load(
        app,
        org,
        {
            "calls": [
                _call(1, {"p": "1"}, {"e": "x"}),
                _call(2, {"p": "1"}, {"e": "y"}),
                _call(3, {"p": "2"}, {"e": "x"}),
            ]
        },
    )
    both = dict(param_key="p", param_value="1", external_identifier_key="e")
    assert await _found_id(client, org, **both, external_identifier_value="x") == _id(1)
    assert await _found_id(client, org, **both, external_identifier_value="y") == _id(2)
    assert_find_error(await _find(client, org, **both, external_identifier_value="z"), 404)
    assert await _found_id(
        client, org, external_identifier_key="e", external_identifier_value="x"
    ) == _id(3)


async def test_params_and_external_identifiers_are_separate(app, client, org):
    await load(app, org, {"calls": [_call(1, {"k": "param"}, {"k": "external"})]})
    assert_find_error(await _find(client, org, param_key="k", param_value="external"), 404)
    assert_find_error(
        await _find(client, org, external_identifier_key="k", external_identifier_value="param"),
        404,
    )


# What a stored value matches (docs/api-contract.md) -----------------------------------------------


@pytest.mark.parametrize(
    "stored, query, matches",
    [
        pytest.param("", "", True, id="empty-string"),
        pytest.param(123, "123", True, id="int"),
        pytest.param(123, "123.0", False, id="int-not-float-text"),
        pytest.param(1.5, "1.5", True, id="float"),
        pytest.param(-0.1, "-0.1", True, id="float-negative"),
        pytest.param(1e16, "1e+16", True, id="float-as-json-writes-it"),
        pytest.param(2**62, str(2**62), True, id="int-large"),
        pytest.param(True, "true", True, id="true"),
        pytest.param(False, "false", True, id="false"),
        pytest.param(True, "True", False, id="bool-case"),
        pytest.param("123", "123", True, id="numeric-string"),
        pytest.param(None, "null", False, id="null"),
        pytest.param(None, "", False, id="null-empty"),
        pytest.param({"a": 1}, '{"a": 1}', False, id="object"),
        pytest.param([1], "[1]", False, id="array"),
        pytest.param(" v", "v", False, id="no-trimming"),
    ],
)
async def test_value_matching(app, client, org, stored, query, matches):
    await load(app, org, {"calls": [_call(1, {"k": stored}, {"k": stored})]})
    for source in ("param", "external_identifier"):
        response = await _find(client, org, **{f"{source}_key": "k", f"{source}_value": query})
        assert response.status_code == (200 if matches else 404), (source, response.text)


# Tenancy ----------------------------------------------------------------------------------


async def test_another_organizations_calls_are_never_found(app, client, org):
    theirs = await make_org(app, "theirs")
    await load(app, org, {"calls": [_call(1, {"k": "v"})]})
    await load(app, theirs, {"calls": [_call(2, {"k": "v"}), _call(3, {"only": "theirs"})]})
    assert await _found_id(client, org, param_key="k", param_value="v") == _id(1)
    assert_find_error(await _find(client, org, param_key="only", param_value="theirs"), 404)


# Errors in the family's shape -------------------------------------------------------------


async def test_unauthenticated_is_401_in_find_shape(client):
    response = await client.get(URL, params={"param_key": "k", "param_value": "v"})
    assert_find_error(response, 401)


async def test_rate_limited_is_429_in_find_shape(make_app):
    from tests.conftest import client_for

    app = await make_app(rate_limit="1/minute")
    org = await make_org(app)
    async with client_for(app) as client:
        await _find(client, org, param_key="k", param_value="v")
        response = await _find(client, org, param_key="k", param_value="v")
    assert_find_error(response, 429)
    assert response.headers["Retry-After"]


# Hostile input ----------------------------------------------------------------------------


async def test_hostile_keys_and_values_are_found_exactly(app, client, org):
    params = {
        "'; DROP TABLE calls; --": "x' OR '1'='1",
        "名前": "値 🚀",
        "%": "_",
        "k" * 255: "v" * 60_000,  # far beyond a btree entry: indexed by digest
        "tab\tkey": "line\nbreak",
    }
    await load(app, org, {"calls": [_call(1, params)]})
    for key, value in params.items():
        assert await _found_id(client, org, param_key=key, param_value=value) == _id(1)
    # LIKE wildcards are not wildcards.
    assert_find_error(await _find(client, org, param_key="%", param_value="%"), 404)


async def test_created_call_is_immediately_findable(app, client, org):
    created = await client.post(
        "/v1/calls",
        headers=org.headers,
        json={
            "to_number": "+14155550123",
            "params": {"big": "x" * 50_000, "n": 42},
            "external_identifiers": {"crm": "c-1"},
        },
    )
    assert created.status_code == 201
    call_id = created.json()["call_id"]
    assert await _found_id(client, org, param_key="big", param_value="x" * 50_000) == call_id
    assert await _found_id(client, org, param_key="n", param_value="42") == call_id
    assert (
        await _found_id(client, org, external_identifier_key="crm", external_identifier_value="c-1")
        == call_id
    )


@pytest.mark.parametrize(
    "query",
    [
        {"param_key": "k\u0000", "param_value": "v"},
        {"param_key": "k", "param_value": "v", "fields": "params.\u0000"},
        {"param_key": "k", "param_value": "v", "fields": "x" * 5000},
    ],
)
async def test_odd_query_strings_never_500(app, client, org, query):
    response = await client.get(URL, params=query, headers=org.headers)
    assert response.status_code in (404, 422, 200), response.text
    assert response.json()["success"] in (True, False)


async def test_invalid_utf8_in_the_query_never_500(app, client, org):
    response = await client.get(
        URL + "?param_key=%FF%FE&param_value=%C0%80&fields=params.%ED%A0%80", headers=org.headers
    )
    assert response.status_code in (404, 422), response.text
    assert response.json()["success"] is False


async def test_empty_fields_value_returns_the_full_call(app, client, org):
    await load(app, org, {"calls": [_call(1, {"k": "v"})]})
    for fields in ("", " , ,"):
        response = await _find(client, org, param_key="k", param_value="v", fields=fields)
        assert list(response.json()["call"]) == CALL_FIELDS
