"""The same request gives the same answer on SQLite and PostgreSQL (issue 9).

Each case states its one expected answer literally — status, and the value read back or the
message — and the suite runs on both databases (``CALLPLANE_TEST_DATABASE``), so both must give
exactly that answer. Values are compared with their JSON types: ``1e20`` must come back as the
float it was, not as the integer 100000000000000000000 PostgreSQL's numeric would write, and
``1.0`` as ``1.0``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import client_for
from tests.factories import load, make_org

EDGE_VALUES: dict[str, Any] = {
    "big_float": 1e20,
    "max_float": 1e308,
    "min_float": -1.7976931348623157e308,
    "one_point_zero": 1.0,
    "tiny": 1e-7,
    "fraction": 0.1,
    "max_int": 2**63 - 1,
    "min_int": -(2**63),
    "big_exact": 12345678901234567,
    "float_1e16": 1e16,
    "text": "snow ☃ and \u200f rtl",
    "nested": [[[{"a": [1.5, None, True]}]]],
}


DEEP: Any = 1
for _ in range(70):
    DEEP = [DEEP]


def _typed(value: Any) -> Any:
    """A value with every number tagged by its JSON type, so 1 and 1.0 differ."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return {k: _typed(v) for k, v in value.items()}


@pytest.fixture
async def org_client(app):
    org = await make_org(app)
    await load(
        app,
        org,
        {
            "tables": [
                {
                    "name": "t",
                    "columns": [
                        {"name": "doc", "type": "JSON"},
                        {"name": "ratio", "type": "FLOAT"},
                    ],
                }
            ]
        },
    )
    async with client_for(app) as c:
        c.headers.update(org.headers)
        yield c


async def test_call_params_read_back_exactly(org_client) -> None:
    created = await org_client.post(
        "/v1/calls",
        json={
            "to_number": "+14155550123",
            "params": EDGE_VALUES,
            "external_identifiers": {"n": -0.0},
        },
    )
    assert created.status_code == 201, created.text
    read = await org_client.get(f"/v1/calls/{created.json()['call_id']}")
    listed = await org_client.get("/v1/calls")
    call = read.json()["call"]
    assert _typed(call["params"]) == _typed(EDGE_VALUES)
    assert _typed(call["external_identifiers"]) == _typed({"n": 0.0})
    assert _typed(listed.json()["calls"][0]["params"]) == _typed(EDGE_VALUES)


async def test_custom_data_json_and_float_read_back_exactly(org_client) -> None:
    created = await org_client.post(
        "/v1/data/t", json={"records": [{"doc": EDGE_VALUES, "ratio": 1e308}]}
    )
    assert created.status_code == 201, created.text
    record_id = created.json()["records"][0]["id"]
    replaced = await org_client.put(
        f"/v1/data/t/{record_id}", json={"doc": EDGE_VALUES, "ratio": -0.0}
    )
    assert replaced.status_code == 200, replaced.text
    read = await org_client.get(f"/v1/data/t/{record_id}")
    record = read.json()["record"]
    assert _typed(record["doc"]) == _typed(EDGE_VALUES)
    assert _typed(record["ratio"]) == _typed(0.0)
    assert _typed(replaced.json()["record"]["doc"]) == _typed(EDGE_VALUES)


async def test_contact_data_reads_back_exactly(org_client) -> None:
    written = await org_client.put("/v1/contacts/+14155550123/data", json={"data": EDGE_VALUES})
    assert written.status_code == 200, written.text
    read = await org_client.get("/v1/contacts/+14155550123/data")
    assert _typed(read.json()["data"]) == _typed(EDGE_VALUES)


@pytest.mark.parametrize(
    "method, path, body, status, message",
    [
        (
            "POST",
            "/v1/call_tags",
            {"name": "nul\u0000byte"},
            422,
            None,  # the detail family: checked by loc below
        ),
        (
            "POST",
            "/v1/calls",
            {"to_number": "+14155550123", "params": {"x": 2**64}},
            422,
            "params.x: must be an integer from -9223372036854775808 to 9223372036854775807",
        ),
        (
            "POST",
            "/v1/calls",
            {"to_number": "+14155550123", "params": {"x": "nul\u0000"}},
            422,
            "params.x: must not contain NUL characters",
        ),
        (
            "POST",
            "/v1/data/t",
            {"records": [{"doc": {"deep": DEEP}}]},
            422,
            "records: is nested more than 64 levels deep",
        ),
        (
            "PUT",
            "/v1/contacts/+14155550123/data",
            {"data": {"a": 1}, "ttlSeconds": 12.5},
            422,
            "ttlSeconds: must be an integer",
        ),
        (
            "GET",
            "/v1/calls?created_after=0001-01-01T00:00:00%2B01:00",
            None,
            422,
            "created_after: must be a timestamp from 0001-01-01 to 9999-12-31 in UTC",
        ),
        (
            "POST",
            "/v1/data/tables",
            {"name": "s", "columns": [{"name": "xmin", "type": "TEXT"}]},
            422,
            "columns[0].name: xmin is a reserved name",
        ),
    ],
    ids=["nul-tag", "int-2^64", "nul-param", "too-deep", "ttl-fraction", "ts-underflow", "xmin"],
)
async def test_refusals_read_the_same(org_client, method, path, body, status, message) -> None:
    response = await org_client.request(method, path, json=body)
    assert response.status_code == status, response.text
    payload = response.json()
    if message is None:
        assert [i["loc"] for i in payload["detail"]] == [["body", "name"]]
        assert payload["detail"][0]["msg"] == "must not contain NUL characters"
    else:
        assert payload["error"] == message
        assert payload["errors"] == [message]
