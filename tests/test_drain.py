"""Drain on SIGTERM (docs/sip-edge.md): ``callplane worker`` and ``callplane serve`` let their calls
in progress finish, up to CALLPLANE_DRAIN_SECONDS; a second SIGTERM ends the wait at once."""

from __future__ import annotations

import asyncio
import signal
import socket
from pathlib import Path

import httpx
import pytest

from tests.conftest import BACKEND, client_for
from tests.engine_support import create_call, events_of, wait_for_call
from tests.factories import make_org
from tests.worker_process import CALLPLANE, WorkerProcess, worker_env


@pytest.mark.skipif(BACKEND != "postgresql", reason="a worker process beside the app: PostgreSQL")
async def test_a_second_sigterm_ends_the_drain_at_once(make_app, database_url, tmp_path):
    app = await make_app(worker="off")
    org = await make_org(app)
    worker = await WorkerProcess.start(
        database_url, tmp_path, simulated_call_seconds=120, worker_poll_seconds=0.05
    )  # and CALLPLANE_DRAIN_SECONDS at its default, 1800
    try:
        async with client_for(app) as client:
            call_id = await create_call(client, org, "+14155550100")
            await wait_for_call(client, org, call_id, {"in_progress"}, within=30)
            worker.process.send_signal(signal.SIGTERM)
            await asyncio.sleep(0.5)
            later = await create_call(client, org, "+14155550101")  # NOTIFY wakes the worker
            await asyncio.sleep(1.0)
            assert worker.process.returncode is None  # draining: the call goes on
            call = await wait_for_call(client, org, call_id, {"in_progress"})
            worker.process.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(worker.process.wait(), 20)
            call = await wait_for_call(client, org, call_id)
            events = await events_of(client, org, call_id)
            later_status = (await wait_for_call(client, org, later, {"enqueued"}))["status"]
    finally:
        await worker.cleanup()
    assert code == 0
    assert call["status"] == "completed"
    ended = [e["data"]["reason"] for e in events if e["type"] == "call.ended"]
    assert ended == ["the worker stopped"]
    assert later_status == "enqueued"  # a draining worker claims nothing


def _free_tcp_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_serve_with_its_engine_drains_on_sigterm(make_app, database_url, tmp_path: Path):
    app = await make_app(worker="off")  # only to make calls and read them; serve runs the engine
    org = await make_org(app)
    port = _free_tcp_port()
    env = worker_env(
        database_url,
        tmp_path / "recordings",
        worker="embedded",
        simulated_call_seconds=3,
        worker_poll_seconds=0.05,
        worker_grace_seconds=0,  # the drain, not the grace, lets the call finish
    )
    server = await asyncio.create_subprocess_exec(
        CALLPLANE, "serve", "--port", str(port),
        env=env, cwd=tmp_path,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            for _ in range(300):
                try:
                    if (await http.get("/healthz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
        async with client_for(app) as client:
            call_id = await create_call(client, org, "+14155550100")
            await wait_for_call(client, org, call_id, {"in_progress"}, within=30)
            server.send_signal(signal.SIGTERM)
            await asyncio.wait_for(server.wait(), 30)
            call = await wait_for_call(client, org, call_id)
            events = await events_of(client, org, call_id)
    finally:
        if server.returncode is None:
            server.kill()
            await server.wait()
    # uvicorn re-raises the SIGTERM it caught once the app has shut down: killed by it, or 0.
    assert server.returncode in (0, -signal.SIGTERM)
    assert call["status"] == "completed"
    ended = [e["data"]["reason"] for e in events if e["type"] == "call.ended"]
    assert ended == ["the far end hung up"]  # it ran its course
