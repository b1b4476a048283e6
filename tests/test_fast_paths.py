"""Every fast path (``http.fast``) answers exactly as its route: the same status, headers and
bytes, for good and bad input, on both databases (``CALLPLANE_TEST_DATABASE``).

The test is parametrized by the table the app serves (``api.V1_FAST_PATHS``), so a new fast
path cannot escape it: it fails until ``CASES`` holds requests for it, and until one of them is
answered by the fast path itself. Each request is sent twice, through the app as it is and with
the fast-path layer passing everything on to the routes; PATCH's clock is frozen so both writes
stamp the same ``updated_at``, and signed URLs' query strings (their expiry) are masked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from callplane.api import V1_FAST_PATHS
from callplane.custom_data import records
from callplane.http.fast import FastPath, FastPathLayer
from tests.factories import OrgHandle, load, make_org
from tests.test_custom_data_support import CUSTOMERS, create_table, insert
from tests.test_external_calls_data import external_call, leg, wav


def key(path: FastPath) -> str:
    return f"{path.method} {path.route}"


def fast_paths_served(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records ``METHOD route`` for every request a fast path answered itself (one it left to
    its route has the route's endpoint in its scope)."""
    served: list[str] = []
    serve = FastPathLayer._serve

    async def recorded(
        self: FastPathLayer, entry: Any, answer: Any, scope: Scope, receive: Receive, send: Send
    ) -> None:
        await serve(self, entry, answer, scope, receive, send)
        if "endpoint" not in scope:
            served.append(key(entry.fast))

    monkeypatch.setattr(FastPathLayer, "_serve", recorded)
    return served


@contextmanager
def routes_only() -> Iterator[None]:
    async def passed_on(self: FastPathLayer, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(FastPathLayer, "__call__", passed_on)
        yield


OURS_A = "6e8d2c3b-0000-4000-8000-0000000a0001"
OURS_B = "6e8d2c3b-0000-4000-8000-0000000b0002"
THEIRS = "6e8d2c3b-0000-4000-8000-0000000c0003"
UNKNOWN = "6e8d2c3b-0000-4000-8000-0000000d0004"


@dataclass(frozen=True)
class World:
    ours: OrgHandle
    theirs: OrgHandle
    #: record ids of our customers, and of theirs (a table of the same name)
    our_ids: list[int]
    their_ids: list[int]


@dataclass(frozen=True)
class Case:
    label: str
    url: str
    #: whose key: "ours", "theirs", "wrong" (unknown), "basic" (another scheme), "none"
    key: str = "ours"
    body: bytes | None = None
    content_type: str | None = "application/json"


async def world(app: Any, client: httpx.AsyncClient) -> World:
    ours, theirs = await make_org(app), await make_org(app, "Other")
    await create_table(client, ours)
    await create_table(client, theirs)
    await create_table(client, theirs, {**CUSTOMERS, "name": "theirs_only"})
    rows = [
        {"name": "Ada", "email": "ada@example.com", "score": 3, "active": True},
        {"name": "Bo", "score": 9, "active": False, "profile": {"tags": ["a", 1.5]}},
        {"name": "Cy", "score": 3, "active": True, "synced_at": "2025-01-02T03:04:05Z"},
    ]
    our_ids = [r["id"] for r in await insert(client, ours, "customers", rows)]
    their_rows = [{"name": "Them", "score": 1, "active": True}]
    their_ids = [r["id"] for r in await insert(client, theirs, "customers", their_rows)]
    audio = wav()
    calls = [
        external_call(
            OURS_A,
            created_at="2025-03-03T00:00:00Z",
            recordings=[leg("6e8d2c3b-0000-4000-8000-00000000f001", "2025-03-01T10:00:00Z", audio)],
        ),
        {"id": OURS_B, "created_at": "2025-03-02T00:00:00Z", "updated_at": "2025-03-02T00:00:00Z"},
    ]
    await load(app, ours, {"external_calls": calls})
    await load(app, theirs, {"external_calls": [external_call(THEIRS, title="theirs")]})
    return World(ours, theirs, our_ids, their_ids)


_WRONG_KEYS = [Case("unknown key", "", key="wrong"), Case("no key", "", key="none")]


def _with(url: str, cases: list[Case]) -> list[Case]:
    return [Case(c.label, url + c.url, c.key, c.body, c.content_type) for c in cases]


def _list_cases(w: World) -> list[Case]:
    queries = [
        "",
        "?page_size=2",
        "?page=2&page_size=2",
        "?sort_by=score&sort_direction=desc",
        "?active=true&score=3",
        "?score=3&score=9",
        "?name=Them",  # their row's value: none of ours
        "?sort_by=nope",
        "?sort_direction=sideways",
        "?page=0",
        "?page_size=1001",
        "?page=abc",
        "?active=maybe",
        "?score=x",
        "?unknown_column=1",
        "?page=1&page=2",
        "?%ff=1",
    ]
    return [
        *(Case(f"query {q!r}", f"/v1/data/customers{q}") for q in queries),
        Case("their key: their rows", "/v1/data/customers", key="theirs"),
        Case("their table", "/v1/data/theirs_only"),
        Case("unknown table", "/v1/data/nope"),
        Case("malformed table name", "/v1/data/" + "x" * 64),
        Case("escaped path", "/v1/data/%63ustomers"),
        *_with("/v1/data/customers", _WRONG_KEYS),
        Case("basic auth", "/v1/data/customers", key="basic"),
    ]


def _record_ids(w: World) -> list[tuple[str, str]]:
    return [
        ("our record", str(w.our_ids[0])),
        ("our record with JSON", str(w.our_ids[1])),
        ("their record", str(w.their_ids[0])),
        ("unknown record", "999999"),
        ("largest id taken", "9" * 18),
        ("id past int64", "9" * 19),
        ("zero", "0"),
        ("leading zero", "0" + str(w.our_ids[0])),
        ("negative", "-1"),
        ("not a number", "abc"),
    ]


def _get_cases(w: World) -> list[Case]:
    first = w.our_ids[0]
    return [
        *(Case(label, f"/v1/data/customers/{rid}") for label, rid in _record_ids(w)),
        Case("with a query string", f"/v1/data/customers/{first}?x=1"),
        Case("their key", f"/v1/data/customers/{w.their_ids[0]}", key="theirs"),
        Case("their key, our record", f"/v1/data/customers/{first}", key="theirs"),
        Case("unknown table", f"/v1/data/nope/{first}"),
        Case("their table", f"/v1/data/theirs_only/{first}"),
        Case("reserved table name", "/v1/data/tables/1"),
        Case("escaped path", f"/v1/data/customers/%3{str(first)[0]}{str(first)[1:]}"),
        *_with(f"/v1/data/customers/{first}", _WRONG_KEYS),
    ]


def _patch_cases(w: World) -> list[Case]:
    first = w.our_ids[0]
    url = f"/v1/data/customers/{first}"
    bodies: list[tuple[str, bytes | None, str | None]] = [
        ("one column", b'{"score": 5}', "application/json"),
        (
            "several columns",
            b'{"name": "Zed", "active": false, "balance": 1.5}',
            "application/json",
        ),
        ("a JSON column", b'{"profile": {"deep": [1, {"x": null}]}}', "application/json"),
        ("a timestamp", b'{"synced_at": "2025-06-01T00:00:00+02:00"}', "application/json"),
        ("no content type", b'{"score": 6}', None),
        ("+json content type", b'{"score": 7}', "application/merge-patch+json"),
        ("an empty object", b"{}", "application/json"),
        ("a list", b"[1]", "application/json"),
        ("a string", b'"x"', "application/json"),
        ("null", b"null", "application/json"),
        ("no body", None, "application/json"),
        ("invalid JSON", b'{"score": ', "application/json"),
        ("a wrong type", b'{"score": "x"}', "application/json"),
        ("an unknown column", b'{"nope": 1}', "application/json"),
        ("a managed column", b'{"id": 5}', "application/json"),
        ("a required column nulled", b'{"name": null}', "application/json"),
        ("a duplicate unique value", b'{"email": "ada@example.com"}', "application/json"),
        ("an integer too large", b'{"score": 9223372036854775808}', "application/json"),
        ("a NUL character", b'{"name": "a\\u0000b"}', "application/json"),
        ("text/plain", b'{"score": 5}', "text/plain"),
        ("form data", b"score=5", "application/x-www-form-urlencoded"),
    ]
    good = b'{"score": 8}'
    return [
        *(Case(label, url, body=body, content_type=ct) for label, body, ct in bodies),
        *(
            Case(label, f"/v1/data/customers/{rid}", body=good)
            for label, rid in _record_ids(w)
            if rid != str(first)
        ),
        Case("sourceUpdatedAtColumn", url + "?sourceUpdatedAtColumn=synced_at", body=good),
        Case("another query string", url + "?x=1", body=good),
        Case("their key, our record", url, key="theirs", body=good),
        Case("unknown table", f"/v1/data/nope/{first}", body=good),
        Case("their table", f"/v1/data/theirs_only/{first}", body=good),
        *_with(url, [Case(c.label, c.url, c.key, good) for c in _WRONG_KEYS]),
        Case("wrong key, bad body", url, key="wrong", body=b"[1]"),
    ]


def _external_list_cases(w: World) -> list[Case]:
    queries = [
        "",
        "?page_size=1",
        "?page=2&page_size=1",
        "?page_size=1&page=2",
        "?page=3&page_size=1",
        "?page=1000000",
        "?page_size=100",
        "?page=0",
        "?page_size=101",
        "?page=1000001",
        "?page=x",
        "?page_size=",
        "?page=-1",
        "?page_size=01",
        "?page=1&page=2",
        "?unknown=1",
        "?page_size=%31",
    ]
    return [
        *(Case(f"query {q!r}", f"/v1/external_calls{q}") for q in queries),
        Case("their key: their calls", "/v1/external_calls", key="theirs"),
        *_with("/v1/external_calls", _WRONG_KEYS),
    ]


def _external_one_cases(w: World) -> list[Case]:
    return [
        Case("our call", f"/v1/external_calls/{OURS_A}"),
        Case("our call, upper case", f"/v1/external_calls/{OURS_A.upper()}"),
        Case("our call without legs", f"/v1/external_calls/{OURS_B}"),
        Case("with a query string", f"/v1/external_calls/{OURS_A}?page=1"),
        Case("their call", f"/v1/external_calls/{THEIRS}"),
        Case("their key, their call", f"/v1/external_calls/{THEIRS}", key="theirs"),
        Case("unknown call", f"/v1/external_calls/{UNKNOWN}"),
        Case("no hyphens", f"/v1/external_calls/{OURS_A.replace('-', '')}"),
        Case("braces", "/v1/external_calls/{" + OURS_A + "}"),
        Case("not a uuid", "/v1/external_calls/nope"),
        Case("escaped path", f"/v1/external_calls/%36{OURS_A[1:]}"),
        *_with(f"/v1/external_calls/{OURS_A}", _WRONG_KEYS),
    ]


#: The requests each fast path is tried with, by ``METHOD route``.
CASES: dict[str, Callable[[World], list[Case]]] = {
    "GET /v1/data/{table_name}": _list_cases,
    "GET /v1/data/{table_name}/{id}": _get_cases,
    "PATCH /v1/data/{table_name}/{id}": _patch_cases,
    "GET /v1/external_calls": _external_list_cases,
    "GET /v1/external_calls/{uuid}": _external_one_cases,
}

_SIGNED = re.compile(rb"\?expires=[0-9]{10}&signature=[A-Za-z0-9_-]{43}\"")


def _headers(w: World, case: Case) -> dict[str, str]:
    headers = {"X-Request-Id": "same-request"}
    if case.key in ("ours", "theirs"):
        org = w.ours if case.key == "ours" else w.theirs
        headers["Authorization"] = f"Bearer {org.api_key}"
    elif case.key == "wrong":
        headers["Authorization"] = "Bearer cp_not_a_key"
    elif case.key == "basic":
        headers["Authorization"] = "Basic dXNlcjpwYXNz"
    if case.body is not None and case.content_type is not None:
        headers["Content-Type"] = case.content_type
    return headers


def _answer(response: httpx.Response) -> tuple[int, list[tuple[str, str]], bytes]:
    body = _SIGNED.sub(b'?expires=E&signature=S"', response.content)
    return response.status_code, sorted(response.headers.multi_items()), body


def test_every_fast_path_has_cases() -> None:
    assert sorted(CASES) == sorted(key(path) for path in V1_FAST_PATHS)


def test_the_app_serves_the_one_table(app: Any) -> None:
    layers = [m for m in app.user_middleware if m.cls is FastPathLayer]
    assert len(layers) == 1
    assert layers[0].kwargs["paths"] == V1_FAST_PATHS


@pytest.mark.parametrize("path", V1_FAST_PATHS, ids=key)
async def test_the_fast_path_answers_as_its_route(
    app: Any, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch, path: FastPath
) -> None:
    w = await world(app, client)
    # PATCH stamps updated_at: the same clock for both ways in.
    monkeypatch.setattr(records, "utcnow", lambda: datetime(2025, 7, 1, 12, 0, 0, 123456, UTC))
    served = fast_paths_served(monkeypatch)
    cases = CASES[key(path)](w)
    for case in cases:
        request = client.build_request(
            path.method, case.url, headers=_headers(w, case), content=case.body
        )
        before = len(served)
        fast_answer = _answer(await client.send(request))
        took = len(served) > before
        with routes_only():
            route_answer = _answer(await client.send(request))
        assert fast_answer == route_answer, (case.label, took)
        assert fast_answer[0] != 500, case.label
    assert key(path) in served, "no case was answered by the fast path itself"
    assert set(served) == {key(path)}
