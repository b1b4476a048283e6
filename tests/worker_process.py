"""``callplane worker`` as a real process, for the tests that need several or need to kill one."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

CALLPLANE = str(Path(sys.executable).with_name("callplane"))


def worker_env(database_url: str, storage_dir: Path, **settings: Any) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CALLPLANE_")}
    env.update(
        CALLPLANE_DATABASE_URL=database_url,
        CALLPLANE_STORAGE_URL=f"file://{storage_dir}",
        CALLPLANE_SIGNING_KEY="test-signing-key",
        CALLPLANE_LOG_LEVEL="warning",
        # As the apps of the tests (conftest.make_settings): the lighter voice.
        CALLPLANE_VOICE_ENGINE="espeak-ng:en-us",
    )
    for name, value in settings.items():
        env[f"CALLPLANE_{name.upper()}"] = str(value)
    return env


class WorkerProcess:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def start(
        cls, database_url: str, workdir: Path, *args: str, **settings: Any
    ) -> WorkerProcess:
        process = await asyncio.create_subprocess_exec(
            CALLPLANE,
            "worker",
            *args,
            env=worker_env(database_url, workdir / "recordings", **settings),
            cwd=workdir,  # no stray .env
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        worker = cls(process)
        await worker._wait_ready()
        return worker

    async def _wait_ready(self) -> None:
        assert self.process.stderr is not None
        line = await asyncio.wait_for(self.process.stderr.readline(), 60)
        if b"running" not in line:
            rest = await self.process.stderr.read()
            raise AssertionError(f"worker did not start: {(line + rest).decode()[-2000:]}")

    async def terminate(self, within: float = 30) -> int:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.process.wait(), within)

    async def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()

    async def cleanup(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            await self.process.wait()
