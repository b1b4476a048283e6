"""The AGENT_RUNS worker task: test runs and replays run on the workers, never in a request.

A worker takes one run at a time (its tests then talk to the model concurrently), woken at once
when a run is asked for and polling at CALLPLANE_WORKER_POLL_SECONDS otherwise. Its lease is
renewed while it works; when the worker dies, another takes the run once the lease lapses.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.agent_tests import queue
from callplane.agent_tests.playing import AudioPlayer
from callplane.agent_tests.replaying import run_replay
from callplane.agent_tests.running import run_tests
from callplane.jobs import TaskContext, WorkerTask
from callplane.kit import wakeups
from callplane.runtime import Runtime

log = logging.getLogger("callplane.agent_tests")


async def _claim(session: AsyncSession, runtime: Runtime) -> queue.Claim | None:
    return await queue.claim_run(session, runtime.settings.worker_lease_seconds)


async def _renew(session: AsyncSession, runtime: Runtime, claim: queue.Claim) -> bool:
    return await queue.renew_lease(session, claim, runtime.settings.worker_lease_seconds)


async def _settle(
    session: AsyncSession, _runtime: Runtime, claim: queue.Claim, outcome: tuple[Any, ...]
) -> bool:
    status, results, error = outcome
    return await queue.settle(session, claim, status, results, error)


async def _keep_lease(ctx: TaskContext, claim: queue.Claim) -> None:
    while True:
        await asyncio.sleep(ctx.settings.worker_lease_seconds / 3)
        if not await ctx.transact(_renew, claim):
            return


async def run_next(ctx: TaskContext, audio: AudioPlayer | None = None) -> bool:
    """Claim and work through one run; False when none is waiting."""
    async with ctx.runtime.db.session(write=False) as session:
        if not await queue.run_waiting(session):
            return False
    claim = await ctx.transact(_claim)
    if claim is None:
        return False
    outcome: tuple[str, list[dict[str, Any]], str | None]
    if claim.attempts > queue.MAX_ATTEMPTS:
        outcome = ("error", [], f"the run was interrupted {claim.attempts - 1} times; giving up")
    else:
        keeper = asyncio.create_task(_keep_lease(ctx, claim))
        try:
            if claim.kind == "tests":
                outcome = await run_tests(ctx.runtime, claim, audio)
            else:
                outcome = await run_replay(ctx.runtime, claim)
        except Exception as exc:
            log.exception("agent run failed", extra={"run_id": str(claim.run_id)})
            outcome = ("error", [], f"the run failed unexpectedly: {exc.__class__.__name__}")
        finally:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
    await ctx.transact(_settle, claim, outcome)
    return True


def agent_runs_task(audio: AudioPlayer | None = None) -> WorkerTask:
    """The task; ``audio`` plays audio-mode runs (the engine gives its own: a domain does not
    import the engine)."""

    async def step(ctx: TaskContext) -> bool:
        return await run_next(ctx, audio)

    async def run(ctx: TaskContext) -> None:
        await ctx.repeat(
            step, interval=ctx.settings.worker_poll_seconds, wake_on=wakeups.AGENT_RUNS
        )

    return WorkerTask("agent-runs", run)
