"""A real server and a real headless Chromium for the dashboard's browser tests.

The app runs under uvicorn in a thread, on a socket bound to an ephemeral 127.0.0.1 port, over
the test database. Chromium is the system's (Debian ``chromium-headless-shell``), driven by
Playwright through ``executable_path``: Playwright's own browser download is never used.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
import uvicorn

from callplane.app import create_app
from callplane.kit.db import Database
from tests.conftest import IN_CI, make_settings

T = TypeVar("T")

SCREENSHOTS = Path(__file__).resolve().parent.parent / "build" / "screenshots"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str:
    """The system Chromium, or a skip (a failure under CI, where it must be installed)."""
    for candidate in (
        os.environ.get("CALLPLANE_TEST_CHROMIUM"),
        shutil.which("chromium-headless-shell"),
        shutil.which("chromium"),
    ):
        if candidate and Path(candidate).exists():
            return candidate
    message = "no system Chromium (apt-get install chromium-headless-shell)"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


class Served:
    """The app behind a real socket, and a way to run setup code against its database."""

    def __init__(self, database_url: str, storage: Path) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.database_url = database_url
        self.settings = make_settings(
            database_url,
            public_url=self.url,
            storage_url=f"file://{storage}",
            signin_limit="200/minute",
            # Webhook endpoints on this machine may be registered (nothing delivers: no worker).
            webhook_allow_private_networks=True,
        )
        self.app = create_app(self.settings)
        config = uvicorn.Config(
            self.app, log_level="warning", lifespan="on", loop="asyncio", access_log=False
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the dashboard test server did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)
        self.sock.close()

    def setup(self, work: Callable[[Any], Awaitable[T]]) -> T:
        """Run ``work(session)`` in one committed transaction on the served database."""

        async def run() -> T:
            db = Database(self.database_url, pool_size=1)
            try:
                async with db.session(write=True) as session:
                    result = await work(session)
                    await session.commit()
                    return result
            finally:
                await db.dispose()

        return run_elsewhere(run)


def run_elsewhere(work: Callable[[], Awaitable[T]]) -> T:
    """``asyncio.run(work())`` in another thread: Playwright's sync API keeps an event loop
    running in the test's own thread."""

    async def main() -> T:
        return await work()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, main()).result()


@contextmanager
def served(database_url: str, storage: Path) -> Iterator[Served]:
    server = Served(database_url, storage)
    server.start()
    try:
        yield server
    finally:
        server.stop()
