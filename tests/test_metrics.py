"""Prometheus metrics (issue 29): who may read them, what a call and a request count, and that
no organization, number or call id ever becomes a label (the series stay bounded)."""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from callplane.kit import logcontext
from callplane.observability.turns import EVENT_TYPE
from tests.conftest import client_for
from tests.dashboard_support import browser_client, make_person, sign_in
from tests.engine_support import create_call, engine_app, events_of, wait_for_call
from tests.factories import make_org
from tests.llm_stub import StubLLM

TOKEN = "metrics-token-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
#: Series one metric may have, whatever the traffic: its labels come from small fixed sets.
MOST_SERIES = 120
ALLOWED_LABELS = {
    "status",
    "direction",
    "phase",
    "kind",
    "tool_type",
    "outcome",
    "code",
    "method",
    "route",
    "le",
}
_ID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}|\+?[0-9]{5,}")


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(scraped: dict[Any, float], name: str, **labels: str) -> float:
    return scraped.get((name, tuple(sorted(labels.items()))), 0.0)


async def scrape(client: httpx.AsyncClient) -> dict[Any, float]:
    response = await client.get("/metrics", headers=AUTH)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return samples(response.text)


async def test_metrics_are_not_public_by_default(make_app: Any) -> None:
    closed = await make_app()
    async with client_for(closed) as client:
        assert (await client.get("/metrics")).status_code == 404
        off = await client.get("/metrics", headers=AUTH)
    assert off.status_code == 404
    # The 404 says how to turn them on, in the shape of any other unknown path.
    assert off.json()["success"] is False and "CALLPLANE_METRICS_TOKEN" in off.json()["error"]
    guarded = await make_app(metrics_token=TOKEN)
    async with client_for(guarded) as client:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
            response = await client.get("/metrics", headers=headers)
            assert response.status_code == 401, headers
            assert response.json()["status"] == 401 or "error" in response.text
        scraped = await scrape(client)
    assert "callplane_calls_queued" in {name for name, _ in scraped}


@pytest.fixture
def brain() -> Iterator[StubLLM]:
    with StubLLM(replies=["Of course.", "Friday works.", "Goodbye!"]) as server:
        yield server


async def test_calls_and_requests_are_counted_with_bounded_labels(
    make_app: Any, brain: StubLLM
) -> None:
    app = await engine_app(
        make_app,
        metrics_token=TOKEN,
        simulated_call_seconds=3,
        simulated_script=["I'd like to move my appointment.", "Friday, please."],
        llm_base_url=brain.base_url,
        llm_model="stub-model",
        llm_timeout_seconds=5,
    )
    orgs = [await make_org(app, f"Org {n}") for n in range(3)]
    async with client_for(app) as client:
        before = await scrape(client)
        calls = []
        for n in range(9):
            org = orgs[n % 3]
            number = f"+1415555{n + 10:04d}"
            calls.append((org, await create_call(client, org, number, first_message="Hi!")))
        busy = await create_call(client, orgs[0], "+14155550001")
        # Requests naming ids, numbers and tables nobody has: each is a template, not a series.
        for _ in range(40):
            await client.get(f"/v1/calls/{uuid.uuid4()}", headers=orgs[0].headers)
            await client.get(f"/v1/data/t{uuid.uuid4().hex[:8]}/7", headers=orgs[1].headers)
            await client.get(f"/no/such/{uuid.uuid4()}")
        finished = [await wait_for_call(client, org, call_id, within=30) for org, call_id in calls]
        await wait_for_call(client, orgs[0], busy)
        events = await events_of(client, *calls[0])
        person = await make_person(app, calls[0][0])
        async with browser_client(app) as dashboard:
            await sign_in(dashboard, person.email, person.password)
            call_page = (await dashboard.get(f"/dashboard/calls/{calls[0][1]}")).text
        after = await scrape(client)
        text = (await client.get("/metrics", headers=AUTH)).text

    assert [c["status"] for c in finished] == ["completed"] * len(calls), finished[0]
    made = value(after, "callplane_calls_finished_total", status="completed", direction="outbound")
    was = value(before, "callplane_calls_finished_total", status="completed", direction="outbound")
    assert made - was == len(calls)
    busy_labels = {"status": "busy", "direction": "outbound"}
    assert (
        value(after, "callplane_calls_finished_total", **busy_labels)
        - value(before, "callplane_calls_finished_total", **busy_labels)
        == 1
    )
    turns = value(after, "callplane_turn_latency_seconds_count", phase="total")
    assert turns - value(before, "callplane_turn_latency_seconds_count", phase="total") >= 9
    route = {"method": "GET", "route": "/v1/calls/{uuid}", "status": "404"}
    assert value(after, "callplane_http_requests_total", **route) >= 40
    hot = {"method": "GET", "route": "/v1/data/{table_name}/{id}", "status": "404"}
    assert value(after, "callplane_http_requests_total", **hot) >= 40
    assert (
        value(after, "callplane_http_requests_total", method="GET", route="unmatched", status="404")
        >= 40
    )

    # Cardinality: no label value is an id or a number, and no metric grows with the traffic:
    # the series this test's 40 distinct ids and 12 calls added stay few (the registry is the
    # process's, so series other tests added before are left out).
    series: dict[str, int] = {}
    for name, labels in after:
        for label, label_value in labels:
            if label not in ("le", "code"):
                assert not _ID.search(label_value), (name, label, label_value)
        if (name, labels) not in before:
            series[name] = series.get(name, 0) + 1
    assert max(series.values(), default=0) <= MOST_SERIES, sorted(
        series.items(), key=lambda x: -x[1]
    )[:3]
    names = {
        label for name, labels in after if name.startswith("callplane_") for label, _ in labels
    }
    assert names <= ALLOWED_LABELS, names - ALLOWED_LABELS
    assert "organization_id" not in text and "to_number" not in text

    # The call's turns, each with its breakdown, placed on the transcript's (recording's) clock.
    latencies = [e["data"] for e in events if e["type"] == EVENT_TYPE]
    assert len(latencies) >= 2
    call = finished[0]
    agent_stamps = {e["timestamp"] for e in call["transcripts"] if e["role"] == "assistant"}
    for turn in latencies:
        phases = ["end_of_turn_ms", "recognition_ms", "first_token_ms", "first_audio_ms"]
        assert all(turn[p] >= 0 for p in phases)
        assert abs(sum(turn[p] for p in phases) - turn["total_ms"]) <= 4
        assert turn["caller_ended_at"] <= turn["agent_started_at"]
        assert min(abs(turn["agent_started_at"] - s) for s in agent_stamps) <= 0.01
    # The dashboard's call page shows each turn's breakdown on the agent's line it led to.
    assert call_page.count('<small class="latency"') == len(latencies)
    assert f"{latencies[0]['total_ms']} ms: end of turn" in call_page


async def test_the_request_id_is_echoed_and_on_the_log_lines_of_the_request(
    make_app: Any,
) -> None:
    app = await make_app(log_level="info")
    handler = logging.getLogger("callplane").handlers[0]
    assert any(isinstance(f, logcontext.ContextFilter) for f in handler.filters)
    capture = Capture()
    records = capture.records
    for each in handler.filters:
        capture.addFilter(each)
    logging.getLogger("callplane").addHandler(capture)
    try:
        async with client_for(app) as client:
            response = await client.get("/healthz", headers={"X-Request-Id": "req-42.a"})
    finally:
        logging.getLogger("callplane").removeHandler(capture)
    assert response.headers["x-request-id"] == "req-42.a"
    assert any(getattr(r, "request_id", None) == "req-42.a" for r in records)


async def test_log_lines_about_a_call_carry_its_ids() -> None:
    capture = Capture()
    records = capture.records
    capture.addFilter(logcontext.ContextFilter())
    log = logging.getLogger("callplane.test.calls")
    log.addHandler(capture)
    log.setLevel(logging.INFO)
    call = uuid.uuid4()

    async def holding() -> None:
        log.info("a turn")
        await asyncio.sleep(0)
        log.info("named elsewhere", extra={"call_id": "kept"})

    try:
        await asyncio.create_task(holding(), context=logcontext.call_context(7, call))
        log.info("outside")
    finally:
        log.removeHandler(capture)
    inside, named, outside = records
    assert (inside.call_id, inside.organization_id) == (str(call), 7)  # type: ignore[attr-defined]
    assert named.call_id == "kept"  # type: ignore[attr-defined]
    assert not hasattr(outside, "call_id")


async def _get(address: str, path: str, headers: str = "") -> bytes:
    host, port = address.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode())
    answer = await reader.read()
    writer.close()
    return answer


async def test_a_metrics_address_of_its_own(make_app: Any) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{sock.getsockname()[1]}"
    app = await make_app(metrics_listen=address, metrics_token=TOKEN)
    # A second process of the same host finds the address taken, and starts all the same.
    await make_app(metrics_listen=address)
    async with client_for(app) as client:
        await client.get("/healthz")
    assert (await _get(address, "/metrics")).startswith(b"HTTP/1.0 401")
    assert (await _get(address, "/other", f"Authorization: Bearer {TOKEN}\r\n")).startswith(
        b"HTTP/1.0 404"
    )
    answer = await _get(address, "/metrics", f"Authorization: Bearer {TOKEN}\r\n")
    assert answer.startswith(b"HTTP/1.0 200")
    assert b'callplane_http_requests_total{method="GET",route="/healthz",status="200"}' in answer
