"""Webhook pages: add an endpoint (secret shown once), send a test event to a real receiver, see
the attempt in the delivery log, redeliver it, delete the endpoint."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.dashboard_support import browser_client, csrf_of, make_person, sign_in
from tests.engine_support import FAST_ENGINE
from tests.factories import make_org


class Receiver:
    def __init__(self) -> None:
        self.bodies: list[dict] = []
        received = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                length = int(self.headers.get("content-length", 0))
                received.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    async def wait_for(self, count: int, within: float = 10.0) -> None:
        deadline = time.monotonic() + within
        while len(self.bodies) < count:
            assert time.monotonic() < deadline, f"{len(self.bodies)} of {count} deliveries"
            await asyncio.sleep(0.05)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.close()


async def test_webhook_endpoints_deliveries_and_redelivery(make_app, receiver):
    app = await make_app(**FAST_ENGINE, webhook_allow_private_networks=True)
    org = await make_org(app)
    person = await make_person(app, org)
    async with browser_client(app) as c:
        await sign_in(c, person.email, person.password)
        page = await c.get("/dashboard/webhooks")
        assert page.status_code == 200 and "No webhook endpoints yet" in page.text
        token = csrf_of(page)
        r = await c.post("/dashboard/webhooks", data={"csrf_token": token, "url": "ftp://x"})
        assert r.status_code == 422 and "url" in r.text and "not added" in r.text
        r = await c.post(
            "/dashboard/webhooks",
            data={
                "csrf_token": token,
                "url": receiver.url,
                "description": "CRM sync",
                "events": ["call.ended", "call.cancelled"],
            },
        )
        assert r.status_code == 303  # POST-redirect-GET: the secret rides the redirect
        r = await c.get(r.headers["location"])
        assert r.status_code == 200 and "whsec_" in r.text and "shown only this once" in r.text
        [endpoint] = (await c.get("/v1/webhooks", headers=org.headers)).json()["webhooks"]
        assert endpoint["events"] == ["call.ended", "call.cancelled"]
        assert "whsec_" not in (await c.get("/dashboard/webhooks")).text

        log = f"/dashboard/webhooks/{endpoint['id']}"
        r = await c.post(f"{log}/test", data={"csrf_token": token})
        assert r.status_code == 303
        await receiver.wait_for(1)
        assert receiver.bodies[0]["type"] == "webhook.test"
        deadline = time.monotonic() + 10
        while "HTTP 200" not in (page := await c.get(log)).text:
            assert time.monotonic() < deadline, page.text
            await asyncio.sleep(0.05)
        assert "delivered" in page.text and "webhook.test" in page.text
        [delivery] = (
            await c.get(f"/v1/webhooks/{endpoint['id']}/deliveries", headers=org.headers)
        ).json()["deliveries"]
        r = await c.post(f"{log}/deliveries/{delivery['id']}/redeliver", data={"csrf_token": token})
        assert r.status_code == 303
        await receiver.wait_for(2)
        assert receiver.bodies[1] == receiver.bodies[0]  # the same event, sent again

        other = await make_org(app, "Other")
        r = await c.post("/v1/webhooks", json={"url": receiver.url}, headers=other.headers)
        theirs = r.json()["webhook"]["id"]
        assert (await c.get(f"/dashboard/webhooks/{theirs}")).status_code == 404
        r = await c.post(f"/dashboard/webhooks/{theirs}/delete", data={"csrf_token": token})
        assert r.status_code == 404

        r = await c.post(f"{log}/delete", data={"csrf_token": token})
        assert r.status_code == 303
        assert (await c.get("/v1/webhooks", headers=org.headers)).json()["webhooks"] == []
        assert (await c.get("/v1/webhooks", headers=other.headers)).json()["webhooks"] != []
