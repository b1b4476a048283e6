"""Webhooks (docs/api-contract.md#webhooks): endpoints, Standard Webhooks signatures verified by a
real receiver, retries on the schedule, the delivery log, redelivery, and the SSRF guard."""

from __future__ import annotations

import asyncio
import time

import pytest
from standardwebhooks.webhooks import Webhook

from tests.conftest import client_for
from tests.engine_support import create_call, engine_app, wait_for_call
from tests.factories import make_org
from tests.paging import OUT_OF_RANGE_PAGING
from tests.test_calls_helpers import assert_status_error
from tests.webhook_receiver import Reply, receiver

ALL_TYPES = [
    "call.dialing",
    "call.in_progress",
    "call.ended",
    "call.cancelled",
    "call.analyzed",
    "call.transferred",
    "external_call.transcribed",
    "external_call.error",
    "campaign.started",
    "campaign.paused",
    "campaign.completed",
    "webhook.test",
]


async def _create(client, org, url, **body):
    response = await client.post("/v1/webhooks", json={"url": url, **body}, headers=org.headers)
    return response


async def _deliveries(client, org, hook_id, query=""):
    response = await client.get(f"/v1/webhooks/{hook_id}/deliveries{query}", headers=org.headers)
    assert response.status_code == 200, response.text
    return response.json()


def _verified(secret, received):
    """Every request's signature checks out with the standardwebhooks library."""
    return [Webhook(secret).verify(r.body, r.headers) for r in received]


async def test_endpoints_are_created_listed_and_deleted(make_app):
    app = await make_app(webhook_allow_private_networks=True)
    org = await make_org(app)
    other = await make_org(app, "other")
    async with client_for(app) as client:
        created = await _create(
            client, org, "http://127.0.0.1:9/a", events=["call.ended"], description="CRM"
        )
        assert created.status_code == 201, created.text
        hook = created.json()["webhook"]
        assert list(hook) == [
            "id", "url", "events", "description", "enabled", "secret", "created_at"
        ]  # fmt: skip
        assert hook["secret"].startswith("whsec_")
        assert hook["events"] == ["call.ended"] and hook["enabled"] is True
        every = (await _create(client, org, "http://127.0.0.1:9/b")).json()["webhook"]
        assert every["events"] == ALL_TYPES

        listed = (await client.get("/v1/webhooks", headers=org.headers)).json()["webhooks"]
        assert [h["id"] for h in listed] == [hook["id"], every["id"]]
        assert all("secret" not in h for h in listed)
        assert (await client.get("/v1/webhooks", headers=other.headers)).json() == {"webhooks": []}

        for method, path in [
            ("DELETE", f"/v1/webhooks/{hook['id']}"),
            ("POST", f"/v1/webhooks/{hook['id']}/test"),
            ("GET", f"/v1/webhooks/{hook['id']}/deliveries"),
        ]:
            theirs = await client.request(method, path, headers=other.headers)
            assert assert_status_error(theirs, 404)["error"] == "Webhook not found"

        deleted = await client.delete(f"/v1/webhooks/{hook['id']}", headers=org.headers)
        assert deleted.json() == {"success": True}
        again = await client.delete(f"/v1/webhooks/{hook['id']}", headers=org.headers)
        assert_status_error(again, 404)
        left = (await client.get("/v1/webhooks", headers=org.headers)).json()["webhooks"]
        assert [h["id"] for h in left] == [every["id"]]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "ftp://example.com/x"}, "url"),
        ({"url": "http:///nohost"}, "url"),
        ({"url": "not a url"}, "url"),
        ({"url": "https://user:pw@example.com/"}, "url"),
        ({"url": "https://example.com:99999/"}, "url"),
        ({"url": "https://example.com/" + "a" * 2100}, "url"),
        ({"url": "https://example.com/", "events": ["call.exploded"]}, "events"),
        ({"url": "https://example.com/", "events": "call.ended"}, "events"),
        ({}, "url"),
    ],
    ids=["ftp", "no-host", "text", "credentials", "port", "long", "event", "events-str", "none"],
)
async def test_invalid_bodies_are_422_in_the_status_shape(make_app, body, field):
    app = await make_app(webhook_allow_private_networks=True)
    org = await make_org(app)
    async with client_for(app) as client:
        response = await client.post("/v1/webhooks", json=body, headers=org.headers)
        assert field in assert_status_error(response, 422)["error"]
        assert (await client.get("/v1/webhooks", headers=org.headers)).json()["webhooks"] == []


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://10.0.0.1/hook",
        "http://192.168.1.20/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://localhost:8000/hook",
        "http://0.0.0.0/hook",
    ],
)
async def test_private_destinations_are_refused_unless_allowed(make_app, url):
    app = await make_app()
    org = await make_org(app)
    async with client_for(app) as client:
        refused = await _create(client, org, url)
        assert "private" in assert_status_error(refused, 422)["error"]
    allowing = await make_app(webhook_allow_private_networks=True)
    async with client_for(allowing) as client:
        assert (await _create(client, org, url)).status_code == 201


async def test_signed_events_of_every_call_arrive_in_sequence(make_app):
    app = await engine_app(make_app, webhook_allow_private_networks=True)
    org = await make_org(app)
    async with receiver() as rec, client_for(app) as client:
        lifecycle = ["call.dialing", "call.in_progress", "call.ended"]
        hook = (await _create(client, org, rec.url, events=lifecycle)).json()["webhook"]
        answered = await create_call(client, org, "+14155550100", first_message="Hi")
        busy = await create_call(client, org, "+14155550001")
        await wait_for_call(client, org, answered)
        await wait_for_call(client, org, busy)
        payloads = _verified(hook["secret"], await rec.wait_for(5))
        await asyncio.sleep(0.2)
        assert len(rec.received) == 5  # nothing else, nothing twice
    by_call: dict[str, list] = {}
    for payload in payloads:
        by_call.setdefault(payload["data"]["call"]["id"], []).append(payload)
    assert [(p["type"], p["data"]["sequence"]) for p in by_call[answered]] == [
        ("call.dialing", 1),
        ("call.in_progress", 2),
        ("call.ended", 3),
    ]
    assert [(p["type"], p["data"]["sequence"]) for p in by_call[busy]] == [
        ("call.dialing", 1),
        ("call.ended", 2),
    ]
    final = by_call[answered][-1]["data"]["call"]
    assert final["status"] == "completed" and final["transcripts"][0]["text"] == "Hi"
    assert by_call[busy][-1]["data"]["call"]["status"] == "busy"
    assert all(set(p) == {"type", "timestamp", "data"} for p in payloads)
    ids = [r.headers["webhook-id"] for r in rec.received]
    assert len(set(ids)) == 5
    assert all(r.headers["content-type"] == "application/json" for r in rec.received)


async def test_event_filter_and_cancel_event(make_app):
    # The API process alone (no engine) writes the event; an engine delivers it.
    app = await make_app(webhook_allow_private_networks=True)
    org = await make_org(app)
    async with receiver() as rec, client_for(app) as client:
        only_cancel = (await _create(client, org, rec.url, events=["call.cancelled"])).json()
        only_ended = (await _create(client, org, rec.url, events=["call.ended"])).json()
        call_id = await create_call(client, org, "+14155550100")
        cancel = await client.post(f"/v1/calls/{call_id}/cancel", headers=org.headers)
        assert cancel.status_code == 200
        await engine_app(make_app, webhook_allow_private_networks=True)
        [payload] = _verified(only_cancel["webhook"]["secret"], await rec.wait_for(1))
        await asyncio.sleep(0.3)
        assert len(rec.received) == 1
        assert payload["type"] == "call.cancelled"
        assert payload["data"]["sequence"] == 1
        assert payload["data"]["call"]["id"] == call_id
        assert payload["data"]["call"]["status"] == "cancelled"
        ended_log = await _deliveries(client, org, only_ended["webhook"]["id"])
        assert ended_log["deliveries"] == []


async def test_a_failing_receiver_gets_the_event_on_the_third_attempt(make_app):
    app = await engine_app(
        make_app, webhook_allow_private_networks=True, webhook_retry_schedule="0,0.3,0.6,60"
    )
    org = await make_org(app)
    async with (
        receiver(lambda n: Reply(status=500 if n <= 2 else 200)) as rec,
        client_for(app) as client,
    ):
        hook = (await _create(client, org, rec.url)).json()["webhook"]
        sent = await client.post(f"/v1/webhooks/{hook['id']}/test", headers=org.headers)
        assert sent.status_code == 202
        event_id = sent.json()["event_id"]
        received = await rec.wait_for(3)
        payloads = _verified(hook["secret"], received)
        assert {r.headers["webhook-id"] for r in received} == {event_id}
        assert [p["type"] for p in payloads] == ["webhook.test"] * 3
        # Attempts follow the schedule, counted from the first try.
        assert received[1].at - received[0].at >= 0.25
        assert received[2].at - received[0].at >= 0.55
        log = await _wait_for_log(client, org, hook["id"], 3)

        assert [(d["attempt"], d["status_code"], d["delivered"]) for d in log["deliveries"]] == [
            (3, 200, True),
            (2, 500, False),
            (1, 500, False),
        ]
        assert log["total_count"] == 3 and log["total_pages"] == 1
        first, second = log["deliveries"][2], log["deliveries"][1]
        assert first["error"] == "HTTP 500" and first["next_attempt_at"] is not None
        assert (
            second["next_attempt_at"] is not None
            and log["deliveries"][0]["next_attempt_at"] is None
        )
        assert all(
            d["event_id"] == event_id and d["type"] == "webhook.test" for d in log["deliveries"]
        )
        assert all(isinstance(d["duration_ms"], int) for d in log["deliveries"])

        page = await _deliveries(client, org, hook["id"], "?page=2&page_size=2")
        assert [d["attempt"] for d in page["deliveries"]] == [1]

        # Redelivery: the same event once more, numbered after the last attempt.
        delivery_id = log["deliveries"][2]["id"]
        again = await client.post(
            f"/v1/webhooks/{hook['id']}/deliveries/{delivery_id}/redeliver", headers=org.headers
        )
        assert again.status_code == 202 and again.json() == {"success": True}
        fourth = (await rec.wait_for(4))[3]
        assert fourth.headers["webhook-id"] == event_id
        log = await _wait_for_log(client, org, hook["id"], 4)
        assert log["deliveries"][0]["attempt"] == 4 and log["deliveries"][0]["delivered"]


async def _wait_for_log(client, org, hook_id, count, within=5.0):
    deadline = time.monotonic() + within
    while True:
        log = await _deliveries(client, org, hook_id)
        if log["total_count"] >= count or time.monotonic() > deadline:
            return log
        await asyncio.sleep(0.05)


async def test_retries_stop_at_the_end_of_the_schedule(make_app):
    app = await engine_app(
        make_app, webhook_allow_private_networks=True, webhook_retry_schedule="0,0.1"
    )
    org = await make_org(app)
    async with receiver(lambda _n: Reply(status=503)) as rec, client_for(app) as client:
        hook = (await _create(client, org, rec.url)).json()["webhook"]
        await client.post(f"/v1/webhooks/{hook['id']}/test", headers=org.headers)
        await rec.wait_for(2)
        log = await _wait_for_log(client, org, hook["id"], 2)
        await asyncio.sleep(0.4)
        assert len(rec.received) == 2
    assert [(d["attempt"], d["delivered"], d["next_attempt_at"]) for d in log["deliveries"]] == [
        (2, False, None),
        (1, False, log["deliveries"][1]["next_attempt_at"]),
    ]


async def test_redirects_are_not_followed_and_large_responses_are_cut(make_app):
    app = await engine_app(
        make_app, webhook_allow_private_networks=True, webhook_retry_schedule="0"
    )
    org = await make_org(app)
    async with (
        receiver(lambda n: Reply(status=200, body=b"x" * 5_000_000)) as big,
        receiver(lambda n: Reply(status=302, headers={"location": big.url})) as moved,
        client_for(app) as client,
    ):
        hook = (await _create(client, org, moved.url)).json()["webhook"]
        huge = (await _create(client, org, big.url)).json()["webhook"]
        await client.post(f"/v1/webhooks/{hook['id']}/test", headers=org.headers)
        await client.post(f"/v1/webhooks/{huge['id']}/test", headers=org.headers)
        redirected = await _wait_for_log(client, org, hook["id"], 1)
        cut = await _wait_for_log(client, org, huge["id"], 1)
    assert [(d["status_code"], d["error"], d["delivered"]) for d in redirected["deliveries"]] == [
        (302, "HTTP 302", False)
    ]
    assert len(big.received) == 1  # only the direct test event, not a followed redirect
    assert cut["deliveries"][0]["delivered"] is True


async def test_a_slow_receiver_delays_neither_calls_nor_other_receivers(make_app):
    app = await engine_app(
        make_app,
        webhook_allow_private_networks=True,
        webhook_timeout_seconds=1.5,
        webhook_retry_schedule="0",
    )
    org = await make_org(app)
    async with (
        receiver(lambda _n: Reply(delay=10.0)) as slow,
        receiver() as fast,
        client_for(app) as client,
    ):
        slow_hook = (await _create(client, org, slow.url)).json()["webhook"]
        await _create(client, org, fast.url)
        calls = [await create_call(client, org, f"+1415555{n:04d}") for n in range(101, 104)]
        for call_id in calls:
            await wait_for_call(client, org, call_id)
        await fast.wait_for(9)
        # Each call's three events take the slow receiver 3 x 1.5 s (in order, each timing out):
        # the calls and the fast receiver were done long before.
        timed_out = await _deliveries(client, org, slow_hook["id"])
        assert timed_out["total_count"] < 9
        log = await _wait_for_log(client, org, slow_hook["id"], 9, within=15)
    assert log["total_count"] == 9
    assert {d["error"] for d in log["deliveries"]} == {"timed out after 1.5 s"}
    assert all(d["duration_ms"] >= 1400 for d in log["deliveries"])


async def test_private_destinations_are_refused_again_at_delivery(make_app):
    """An endpoint accepted earlier (here: while private networks were allowed) is checked again
    on every attempt, on the address actually connected to."""
    permissive = await make_app(webhook_allow_private_networks=True)
    app = await engine_app(make_app, webhook_retry_schedule="0")
    org = await make_org(app)
    async with receiver() as rec, client_for(permissive) as setup, client_for(app) as client:
        hook = (await _create(setup, org, rec.url)).json()["webhook"]
        await client.post(f"/v1/webhooks/{hook['id']}/test", headers=org.headers)
        log = await _wait_for_log(client, org, hook["id"], 1)
    [attempt] = log["deliveries"]
    assert attempt["delivered"] is False and attempt["status_code"] is None
    assert "refused" in attempt["error"]
    assert rec.received == []


async def test_redeliver_unknown_delivery_is_404(make_app):
    app = await make_app(webhook_allow_private_networks=True)
    org = await make_org(app)
    async with client_for(app) as client:
        hook = (await _create(client, org, "http://127.0.0.1:9/x")).json()["webhook"]
        missing = await client.post(
            f"/v1/webhooks/{hook['id']}/deliveries/5f0c4a9e-1b2d-4c3e-8f4a-0b1c2d3e4f50/redeliver",
            headers=org.headers,
        )
        assert assert_status_error(missing, 404)["error"] == "Delivery not found"
        bad = await client.post(
            f"/v1/webhooks/{hook['id']}/deliveries/nope/redeliver", headers=org.headers
        )
        assert_status_error(bad, 422)


@pytest.mark.parametrize("query", OUT_OF_RANGE_PAGING)
async def test_deliveries_paging_out_of_range_is_422(make_app, query):
    app = await make_app(webhook_allow_private_networks=True)
    org = await make_org(app)
    async with client_for(app) as client:
        hook = (await _create(client, org, "http://127.0.0.1:9/x")).json()["webhook"]
        response = await client.get(
            f"/v1/webhooks/{hook['id']}/deliveries?{query}", headers=org.headers
        )
        assert_status_error(response, 422)
