"""Retries of callplane-client against the real server: a 429 waits out Retry-After, a connection
dropped before the answer of calls.create is retried without placing a second call, and answers
from a newer server (unknown fields, unknown enum values) pass through."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest
from callplane_client import APIConnectionError, Callplane

from tests.live_server import live_server, seed_org


def test_429_is_retried_after_retry_after(database_url: str, tmp_path: Path) -> None:
    org = seed_org(database_url, tmp_path, demo=False)
    statuses: list[tuple[float, int, str | None]] = []

    def record(response: httpx.Response) -> None:
        statuses.append(
            (time.monotonic(), response.status_code, response.headers.get("retry-after"))
        )

    with live_server(database_url, tmp_path, rate_limit="3/second") as server:
        http = httpx.Client(event_hooks={"response": [record]})
        with Callplane(org.api_key, base_url=server.url, http_client=http) as api:
            for _ in range(12):  # until the limit bites, then the retry gets through
                assert api.voices.list() == []
                if any(status == 429 for _, status, _ in statuses):
                    break
        http.close()
    limited = next(i for i, (_, status, _) in enumerate(statuses) if status == 429)
    at, _, retry_after = statuses[limited]
    assert retry_after is not None and int(retry_after) >= 1
    then, status, _ = statuses[limited + 1]
    assert status == 200 and then - at >= int(retry_after) - 0.05


class DroppingProxy:
    """A TCP proxy to the server that, on its first connection, lets the request through and
    throws the answer away, closing the connection: the call is made, the client never hears."""

    def __init__(self, upstream: str) -> None:
        self.upstream = httpx.URL(upstream)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.connections = 0
        self.sockets: list[socket.socket] = []
        self.dropped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            upstream = socket.create_connection((self.upstream.host, self.upstream.port))
            self.sockets += [downstream, upstream]
            drop = self.connections == 1
            threading.Thread(
                target=self._pump, args=(downstream, upstream, False), daemon=True
            ).start()
            threading.Thread(
                target=self._pump, args=(upstream, downstream, drop), daemon=True
            ).start()

    def _pump(self, source: socket.socket, target: socket.socket, drop: bool) -> None:
        try:
            while chunk := source.recv(65536):
                if drop:  # the answer arrived: hang up on the client instead of passing it on
                    target.shutdown(socket.SHUT_RDWR)
                    self.dropped.set()
                    break
                target.sendall(chunk)
        except OSError:
            pass
        finally:
            source.close()
            target.close()

    def close(self) -> None:
        self.listener.close()
        for sock in self.sockets:  # connections still open (keep-alive): close them, not the GC
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


def test_dropped_answer_to_calls_create_is_retried_without_a_second_call(
    database_url: str, tmp_path: Path
) -> None:
    org = seed_org(database_url, tmp_path, demo=False)
    with live_server(database_url, tmp_path) as server:
        proxy = DroppingProxy(server.url)
        try:
            with Callplane(org.api_key, base_url=proxy.url) as api:
                call = api.calls.create("+14155550100", params={"order": "A-1"})
            assert proxy.dropped.is_set() and proxy.connections == 2
        finally:
            proxy.close()
        with Callplane(org.api_key, base_url=server.url) as direct:
            calls = direct.calls.list()
        assert calls.total_count == 1 and calls.items[0].id == call.id


def test_no_answer_at_all_is_an_api_connection_error(database_url: str, tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    with Callplane("cp_x", base_url=f"http://127.0.0.1:{port}") as api:
        started = time.monotonic()
        with pytest.raises(APIConnectionError) as failed:
            api.voices.list()
    assert failed.value.status_code is None and time.monotonic() - started < 10


class NewerServer(httpx.HTTPTransport):
    """The real server's answers, as a newer version would give them: an extra field on every
    object and a call status this client has never heard of."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        response.read()
        body = json.loads(response.content)

        def newer(node: object) -> object:
            if isinstance(node, dict):
                node = {k: newer(v) for k, v in node.items()} | {"added_later": {"x": 1}}
                if node.get("status") == "completed":
                    node["status"] = "transferred_to_mars"
                return node
            if isinstance(node, list):
                return [newer(v) for v in node]
            return node

        return httpx.Response(
            response.status_code,
            headers={"content-type": "application/json"},
            json=newer(body),
        )


def test_unknown_fields_and_enum_values_pass_through(database_url: str, tmp_path: Path) -> None:
    org = seed_org(database_url, tmp_path)
    with live_server(database_url, tmp_path) as server:
        http = httpx.Client(transport=NewerServer())
        with Callplane(org.api_key, base_url=server.url, http_client=http) as api:
            call = api.calls.get("5c0f1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e01")
            page = api.calls.list(status="completed")
        http.close()
    assert call.status == "transferred_to_mars"
    assert call.added_later == {"x": 1} and call["added_later"] == {"x": 1}
    assert call.tags[0].added_later == {"x": 1} and call.tags[0].name
    assert call.transcripts[0].added_later == {"x": 1}
    assert call.agent_branch  # a SPEC field this client does not declare is still there
    assert page.body["added_later"] == {"x": 1}
    assert {c.status for c in page} == {"transferred_to_mars"}
