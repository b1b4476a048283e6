"""A real HTTP webhook receiver for tests: a server on 127.0.0.1 (ephemeral port) that keeps
every delivery and checks its Standard Webhooks signature against the endpoint's secret."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class WebhookReceiver:
    def __init__(self) -> None:
        self.deliveries: list[dict[str, Any]] = []
        self.secret: str | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/hooks"

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def signature_ok(self, delivery: dict[str, Any]) -> bool:
        assert self.secret is not None
        key = base64.b64decode(self.secret.removeprefix("whsec_"))
        headers = delivery["headers"]
        signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.{delivery['raw']}"
        expected = base64.b64encode(hmac.new(key, signed.encode(), hashlib.sha256).digest())
        offered = [s.split(",", 1)[1] for s in headers["webhook-signature"].split()]
        return expected.decode() in offered

    async def wait_for(self, type_: str, within: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            with self._lock:
                for delivery in self.deliveries:
                    if delivery["body"].get("type") == type_:
                        return delivery
            await asyncio.sleep(0.03)
        raise AssertionError(f"no {type_} webhook within {within} s")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                headers = {k.lower(): v for k, v in self.headers.items()}
                with receiver._lock:
                    receiver.deliveries.append(
                        {"raw": raw, "body": json.loads(raw), "headers": headers}
                    )
                self.send_response(204)
                self.end_headers()

        return Handler
