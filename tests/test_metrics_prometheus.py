"""Done when (issue 29): a real Prometheus scrapes the API and the workers on PostgreSQL while
simulated calls with a stub brain run, and its HTTP API then shows every completed call, the
turns' latency samples and the webhook outcomes.

The two workers share one ``PROMETHEUS_MULTIPROC_DIR`` (one host) and only one of them serves
``CALLPLANE_METRICS_LISTEN``: its totals are both processes', which is what multiprocess mode
is for. The API serves ``/metrics`` with its bearer token, as Prometheus is configured to send.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from tests.conftest import BACKEND, client_for
from tests.engine_support import create_call, wait_for_call
from tests.factories import make_org
from tests.llm_stub import StubLLM
from tests.webhook_receiver import receiver
from tests.worker_process import WorkerProcess

PROMETHEUS = shutil.which("prometheus")
TOKEN = "prometheus-test-token"
CALLS = 6

pytestmark = [
    # ~20 s: two worker processes and a Prometheus start, and calls last their simulated length.
    pytest.mark.slow,
    pytest.mark.postgres,
    pytest.mark.skipif(BACKEND != "postgresql", reason="workers in several processes: PostgreSQL"),
    pytest.mark.skipif(PROMETHEUS is None, reason="Debian's prometheus package is not installed"),
]


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.asynccontextmanager
async def _serving(app: FastAPI) -> AsyncIterator[str]:
    """The (already started) app over real HTTP, for Prometheus to scrape."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    for _ in range(500):
        if server.started:
            break
        await asyncio.sleep(0.02)
    try:
        yield f"127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task
        sock.close()


@contextlib.asynccontextmanager
async def _prometheus(tmp_path: Path, api: str, worker: str) -> AsyncIterator[str]:
    assert PROMETHEUS is not None
    config = tmp_path / "prometheus.yml"
    config.write_text(
        f"""
global:
  scrape_interval: 500ms
  scrape_timeout: 400ms
scrape_configs:
  - job_name: api
    authorization:
      credentials: {TOKEN}
    static_configs: [{{targets: ["{api}"]}}]
  - job_name: worker
    static_configs: [{{targets: ["{worker}"]}}]
"""
    )
    port = _port()
    process = await asyncio.create_subprocess_exec(
        PROMETHEUS,
        f"--config.file={config}",
        f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        await process.wait()


async def _query(client: httpx.AsyncClient, url: str, promql: str) -> list[Any]:
    response = await client.get(f"{url}/api/v1/query", params={"query": promql})
    response.raise_for_status()
    result: list[Any] = response.json()["data"]["result"]
    return result


async def _until(client: httpx.AsyncClient, url: str, promql: str, want: float) -> float:
    """The query's single value once it reaches ``want`` (scrapes come every half second)."""
    deadline = time.monotonic() + 60
    got = -1.0
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            result = await _query(client, url, promql)
            got = float(result[0]["value"][1]) if result else -1.0
            if got >= want:
                return got
        await asyncio.sleep(0.25)
    raise AssertionError(f"{promql} = {got}, wanted {want}")


async def test_prometheus_sees_the_calls_turns_and_webhooks(
    make_app: Any, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = await make_app(metrics_token=TOKEN, webhook_allow_private_networks=True)
    org = await make_org(app)
    worker_address = f"127.0.0.1:{_port()}"
    settings = {
        "simulated_call_seconds": 2,
        "simulated_script": '["I would like to book a table.", "Two people, at eight."]',
        "worker_poll_seconds": 0.05,
        "webhook_allow_private_networks": "true",
        "llm_model": "stub-model",
        "llm_timeout_seconds": 5,
    }
    multiproc = tmp_path / "prometheus-multiproc"
    multiproc.mkdir()
    with StubLLM(replies=["Of course.", "Booked for eight.", "Goodbye!"]) as brain:
        async with receiver() as hooks, client_for(app) as client, _serving(app) as api:
            hook = await client.post(
                "/v1/webhooks",
                json={"url": hooks.url, "events": ["call.ended"]},
                headers=org.headers,
            )
            assert hook.status_code == 201, hook.text
            with monkeypatch.context() as env:  # the workers' environment only
                env.setenv("PROMETHEUS_MULTIPROC_DIR", str(multiproc))
                # Started together: each takes a few seconds to load.
                workers = list(
                    await asyncio.gather(
                        WorkerProcess.start(
                            database_url,
                            tmp_path,
                            llm_base_url=brain.base_url,
                            metrics_listen=worker_address,
                            **settings,
                        ),
                        WorkerProcess.start(
                            database_url, tmp_path, llm_base_url=brain.base_url, **settings
                        ),
                    )
                )
            try:
                async with _prometheus(tmp_path, api, worker_address) as prometheus:
                    calls = [
                        await create_call(client, org, f"+1415555{n + 20:04d}", first_message="Hi")
                        for n in range(CALLS)
                    ]
                    for call_id in calls:
                        done = await wait_for_call(client, org, call_id, within=60)
                        assert done["status"] == "completed"
                    await hooks.wait_for(CALLS, within=30)
                    async with httpx.AsyncClient(timeout=5) as prom:
                        completed = await _until(
                            prom,
                            prometheus,
                            'sum(callplane_calls_finished_total{job="worker",status="completed"})',
                            CALLS,
                        )
                        turns = await _until(
                            prom,
                            prometheus,
                            'sum(callplane_turn_latency_seconds_count{phase="total"})',
                            1,
                        )
                        delivered = await _until(
                            prom,
                            prometheus,
                            # The workers' deliveries: the API's registry is this test process's,
                            # which earlier tests' in-process deliveries have counted into.
                            'sum(callplane_webhook_deliveries_total{job="worker",outcome="delivered"})',
                            CALLS,
                        )
                        requests = await _until(
                            prom,
                            prometheus,
                            'sum(callplane_http_requests_total{job="api",route="/v1/calls"})',
                            CALLS,
                        )
                        queued = await _query(prom, prometheus, "callplane_calls_queued")
                        workers_up = await _query(prom, prometheus, 'up{job="worker"}')
            finally:
                for worker in workers:
                    await worker.terminate()
    # Both workers' calls, added up by the one that serves the metrics: exactly the calls made.
    assert completed == CALLS
    # Every call answered at least its caller's first line.
    assert turns >= CALLS
    assert delivered == CALLS
    assert requests >= CALLS
    assert {r["metric"]["job"] for r in queued} == {"api", "worker"}
    assert workers_up[0]["value"][1] == "1"
