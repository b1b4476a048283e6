"""A real HTTP server for tests that need one (generated and hand-written clients): the app of
``create_app(settings)`` under uvicorn in a thread, on an ephemeral loopback port."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI

from callplane.app import create_app
from callplane.demo import load_demo_into
from callplane.kit.db import Database
from callplane.orgs.service import create_organization, issue_key
from tests.conftest import make_settings


def _storage(tmp_path: Path) -> str:
    return f"file://{tmp_path / 'recordings'}"


@dataclass
class LiveServer:
    url: str
    app: FastAPI


@dataclass
class SeededOrg:
    id: int
    api_key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}


def seed_org(
    database_url: str, tmp_path: Path, name: str = "Client tests", demo: bool = True
) -> SeededOrg:
    """An organization with a key and, by default, the demo data (its recordings in the storage
    ``live_server`` uses for ``tmp_path``); committed. For sync tests (it runs its own loop)."""
    settings = make_settings(database_url, storage_url=_storage(tmp_path))

    async def seed() -> SeededOrg:
        db = Database(database_url, pool_size=1)
        try:
            async with db.session(write=True) as session:
                org = await create_organization(session, name)
                key = await issue_key(session, org.id)
                if demo:
                    await load_demo_into(session, settings, org.id)
                await session.commit()
                return SeededOrg(id=org.id, api_key=key.api_key)
        finally:
            await db.dispose()

    return asyncio.run(seed())


@contextmanager
def live_server(database_url: str, tmp_path: Path, **overrides: Any) -> Iterator[LiveServer]:
    """Serve until the block ends. Call from a sync test: the server has its own event loop."""
    overrides.setdefault("storage_url", _storage(tmp_path))
    # The engine, where it exists, would dispatch the demo's enqueued calls under the tests.
    overrides.setdefault("worker", "off")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    overrides.setdefault("public_url", url)
    app = create_app(make_settings(database_url, **overrides))
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", loop="asyncio")
    )
    live = LiveServer(url=url, app=app)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])))
    thread.start()
    for _ in range(400):
        if server.started:
            break
        threading.Event().wait(0.05)
    assert server.started, "test server did not start"
    try:
        yield live
    finally:
        server.should_exit = True
        thread.join(20)
        sock.close()
