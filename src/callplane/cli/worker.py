"""``callplane worker``: the call engine as its own process (docs/engine-core.md).

The database must be migrated (``callplane migrate``, or any ``serve``). Run as many as needed
against one PostgreSQL database; they share the calls and webhook
deliveries. SIGTERM or SIGINT drains it (``engine/drain.py``: calls in progress may finish for
up to CALLPLANE_DRAIN_SECONDS); a second one ends it at once.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from callplane.cli.common import fail, missing_database
from callplane.settings import Settings


def worker(
    concurrency: Annotated[
        int | None,
        typer.Option(min=1, help="Calls held at once (default CALLPLANE_WORKER_CONCURRENCY)"),
    ] = None,
) -> None:
    """Run the call engine: dispatch calls, hold conversations, deliver webhooks."""
    from callplane.engine.drain import StopSignals, drain
    from callplane.engine.worker import Engine
    from callplane.kit.logs import configure_logging
    from callplane.observability import exposition, tracing
    from callplane.runtime import Runtime

    settings = Settings()
    if why := missing_database(settings.database_url):
        fail(why)
    configure_logging(settings.log_level)
    tracing.configure()

    async def _run() -> None:
        runtime = Runtime.build(settings)
        stop_metrics = await exposition.start_listener(runtime)  # CALLPLANE_METRICS_LISTEN
        try:
            engine = Engine(runtime, concurrency=concurrency)
            signals = StopSignals.install()
            await engine.start()
            typer.echo(f"callplane worker {engine.worker_id} running", err=True)
            await signals.requested.wait()
            await drain(engine, settings.drain_seconds, signals.hurry)
        finally:
            await stop_metrics()
            await runtime.close()

    asyncio.run(_run())
