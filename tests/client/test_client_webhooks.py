"""callplane_client.webhooks.verify: signatures made by the `standardwebhooks` library, and a
real delivery of the server to a real receiver."""

from __future__ import annotations

import base64
import json
import queue
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from callplane_client import Callplane, webhooks
from callplane_client.webhooks import WebhookVerificationError
from standardwebhooks.webhooks import Webhook

from tests.live_server import live_server, seed_org

SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()


def signed(body: str, msg_id: str = "msg_1", at: int | None = None) -> dict[str, str]:
    at = int(time.time()) if at is None else at
    signature = Webhook(SECRET).sign(msg_id, _datetime(at), body)
    return {"webhook-id": msg_id, "webhook-timestamp": str(at), "webhook-signature": signature}


def _datetime(at: int):  # noqa: ANN202
    from datetime import UTC, datetime

    return datetime.fromtimestamp(at, UTC)


def test_accepts_what_standardwebhooks_signs() -> None:
    body = json.dumps({"type": "call.dialing", "data": {"call": {"id": "c1"}}})
    headers = signed(body)
    assert webhooks.verify(body, headers, SECRET)["type"] == "call.dialing"
    assert webhooks.verify(body.encode(), {k.title(): v for k, v in headers.items()}, SECRET)
    # and standardwebhooks accepts what this module signs
    ours = webhooks.sign(body, "msg_1", int(headers["webhook-timestamp"]), SECRET)
    Webhook(SECRET).verify(body, headers | {"webhook-signature": ours})
    rotated = headers | {"webhook-signature": "v1,bm9wZQ== " + headers["webhook-signature"]}
    assert webhooks.verify(body, rotated, SECRET)


@pytest.mark.parametrize(
    "tamper",
    ["body", "id", "secret", "old", "future", "missing", "version"],
)
def test_refuses_anything_altered(tamper: str) -> None:
    body = '{"type": "webhook.test"}'
    headers, secret = signed(body), SECRET
    if tamper == "body":
        body = '{"type": "webhook.tesT"}'
    elif tamper == "id":
        headers["webhook-id"] = "msg_2"
    elif tamper == "secret":
        secret = "whsec_" + base64.b64encode(b"another secret of 32 bytes......").decode()
    elif tamper == "old":
        headers = signed(body, at=int(time.time()) - 600)
    elif tamper == "future":
        headers = signed(body, at=int(time.time()) + 600)
    elif tamper == "missing":
        del headers["webhook-signature"]
    elif tamper == "version":
        headers["webhook-signature"] = headers["webhook-signature"].replace("v1,", "v2,")
    with pytest.raises(WebhookVerificationError):
        webhooks.verify(body, headers, secret)


def test_a_real_delivery_verifies(database_url: str, tmp_path: Path) -> None:
    received: queue.Queue[tuple[bytes, dict[str, str]]] = queue.Queue()

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers["content-length"]))
            received.put((body, dict(self.headers.items())))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    org = seed_org(database_url, tmp_path, demo=False)
    engine = {
        "worker": "embedded",
        "webhook_allow_private_networks": True,
        "worker_grace_seconds": 0,
    }
    try:
        with (
            live_server(database_url, tmp_path, **engine) as server,
            Callplane(org.api_key, base_url=server.url) as api,
        ):
            hook = api.webhooks.create(
                f"http://127.0.0.1:{receiver.server_address[1]}/hook", description="test"
            )
            assert hook.secret.startswith("whsec_")
            assert [w.id for w in api.webhooks.list()] == [hook.id]
            sent = api.webhooks.test(hook.id)
            body, headers = received.get(timeout=20)
            event = webhooks.verify(body, headers, hook.secret)
            assert event["type"] == "webhook.test" and headers["webhook-id"]
            deadline = time.monotonic() + 10
            while not (deliveries := api.webhooks.deliveries(hook.id)).items:
                assert time.monotonic() < deadline
                time.sleep(0.1)
            assert deliveries.items[0].event_id == sent.event_id
            assert api.webhooks.redeliver(hook.id, deliveries.items[0].id).success
            body_again, _ = received.get(timeout=20)
            assert json.loads(body_again)["type"] == "webhook.test"
            assert api.webhooks.delete(hook.id).success
    finally:
        receiver.shutdown()
        receiver.server_close()
