"""The engine inside ``callplane serve`` (CALLPLANE_WORKER, docs/engine-core.md).

``auto`` runs it on SQLite (one machine: ``make run`` shows calls moving with nothing else to
start) and not on PostgreSQL, where ``callplane worker`` processes do the work; ``embedded``
always runs it; ``off`` never.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from callplane.engine.drain import drain, watch_signals
from callplane.engine.worker import Engine
from callplane.runtime import Runtime


def runs_embedded(runtime: Runtime) -> bool:
    mode = runtime.settings.worker
    if mode == "auto":
        return runtime.db.backend == "sqlite"
    return mode == "embedded"


@asynccontextmanager
async def embedded_engine(runtime: Runtime) -> AsyncIterator[Engine | None]:
    if not runs_embedded(runtime):
        yield None
        return
    engine = Engine(runtime)
    await engine.start()
    with watch_signals() as signals:
        try:
            yield engine
        finally:
            if signals.requested.is_set():  # serve got SIGTERM: drain as a worker does
                await drain(engine, runtime.settings.drain_seconds, signals.hurry)
            else:
                await engine.stop()
