"""The engine of one worker process: its identity, its calls, its tasks, its shutdown.

``Engine(runtime)`` is started by ``callplane worker`` or inside ``serve`` (``embedded.py``).
It assembles the parts: a ``TaskRunner`` (runner.py, what every worker task runs on), a
``Switchboard`` (switchboard.py, the calls this worker holds, with its telephony, providers and
group commit) handed its inbound router, and the worker tasks (tasks.py). Stopping is graceful:
no new call is claimed, calls in progress may finish for up to CALLPLANE_WORKER_GRACE_SECONDS
(leases keep being renewed meanwhile), then the rest are hung up and completed, and the tasks
end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from typing import Any

from callplane.engine.agent import AgentSource
from callplane.engine.agent_source import commit_of_call
from callplane.engine.batching import GroupCommit
from callplane.engine.calls import inbound_router
from callplane.engine.conversation.session import ConversationServices
from callplane.engine.lifecycle import apply_moves
from callplane.engine.providers import Providers, build_providers
from callplane.engine.runner import TaskRunner
from callplane.engine.switchboard import Switchboard
from callplane.engine.tasks import worker_tasks
from callplane.jobs import WorkerTask
from callplane.kit import wakeups
from callplane.kit.db import async_url
from callplane.runtime import Runtime
from callplane.telephony.base import TelephonyAdapter

log = logging.getLogger("callplane.engine")


def new_worker_id() -> str:
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(3)}"


def build_adapter(runtime: Runtime) -> TelephonyAdapter:
    """The phone network named by CALLPLANE_TELEPHONY."""
    settings = runtime.settings
    if settings.telephony == "sip":
        from callplane.telephony.sip import build_adapter as build_sip

        return build_sip(settings)
    from callplane.telephony.simulated import SimulatedTelephony

    return SimulatedTelephony(settings.simulated_call_seconds, settings.simulated_script)


class Engine:
    def __init__(
        self,
        runtime: Runtime,
        *,
        concurrency: int | None = None,
        adapter: TelephonyAdapter | None = None,
        worker_id: str | None = None,
        providers: Providers | None = None,
        agents: AgentSource = commit_of_call,
        tasks: list[WorkerTask] | None = None,
    ) -> None:
        self.runtime = runtime
        self.settings = runtime.settings
        self.runner = TaskRunner(runtime)
        runner = self.runner
        moves = GroupCommit(lambda requests: runner.transact(apply_moves, requests))
        self.board = Switchboard(
            jobs=self.runner,
            worker_id=worker_id or new_worker_id(),
            concurrency=concurrency or self.settings.worker_concurrency,
            adapter=adapter or build_adapter(runtime),
            services=ConversationServices(
                runtime,
                providers or build_providers(self.settings),
                agents=agents,
                apply_move=moves.apply,
            ),
            moves=moves,
        )
        self.tasks = worker_tasks(self.board) if tasks is None else tasks
        self._loops: list[asyncio.Task[None]] = []
        self._listener: Any = None
        self._started = False

    @property
    def worker_id(self) -> str:
        return self.board.worker_id

    @property
    def adapter(self) -> TelephonyAdapter:
        return self.board.adapter

    # -- running ---------------------------------------------------------------------------

    async def start(self) -> None:
        await self.adapter.start(inbound_router(self.board))
        self.board.moves.start()
        if self.runtime.db.backend == "postgresql":
            await self._listen()
        for task in self.tasks:
            self._loops.append(asyncio.create_task(self.runner.supervise(task), name=task.name))
        self._started = True
        log.info(
            "engine started",
            extra={"worker_id": self.worker_id, "tasks": [t.name for t in self.tasks]},
        )

    async def _listen(self) -> None:
        """LISTEN on the wake-up channels: PostgreSQL's NOTIFY wakes this worker at once."""
        import asyncpg

        dsn = async_url(self.runtime.db.url).replace("postgresql+asyncpg://", "postgresql://", 1)
        try:
            self._listener = await asyncpg.connect(dsn)
            for channel in wakeups.CHANNELS:
                await self._listener.add_listener(
                    channel, lambda _c, _p, ch, _m: wakeups.local.wake(ch)
                )
        except (OSError, asyncpg.PostgresError):
            log.warning("LISTEN unavailable; polling only", exc_info=True)
            self._listener = None

    # -- stopping --------------------------------------------------------------------------

    async def stop(self, grace: float | None = None) -> None:
        """Stop claiming; let calls finish for ``grace`` seconds; hang up the rest; stop."""
        if not self._started:
            return
        self._started = False
        board = self.board
        board.draining = True
        grace = self.settings.worker_grace_seconds if grace is None else grace
        with contextlib.suppress(Exception):
            await self.adapter.stop()
        if board.calls:
            log.info(
                "waiting for calls in progress",
                extra={"calls": len(board.calls), "grace_seconds": grace},
            )
            await asyncio.wait(set(board.calls), timeout=grace)
        for task in list(board.calls):
            task.cancel()
        if board.calls:
            await asyncio.wait(set(board.calls), timeout=10)
        self.runner.stopping.set()
        for loop in self._loops:
            loop.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        self._loops.clear()
        await board.moves.stop()
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.close()
            self._listener = None
        await board.services.aclose()
        log.info("engine stopped", extra={"worker_id": self.worker_id})
