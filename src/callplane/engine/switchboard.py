"""The calls one worker holds: its telephony, its conversations' services, its group commit,
and the call tasks with their leases. Dispatch, leases and inbound calls work on this, not on
the whole engine."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from callplane.engine.batching import GroupCommit
from callplane.engine.conversation.session import ConversationServices
from callplane.engine.lifecycle import CallRef
from callplane.jobs import TaskContext
from callplane.kit import wakeups
from callplane.kit.logcontext import call_context
from callplane.observability.tracing import traced_call
from callplane.settings import Settings
from callplane.telephony.base import TelephonyAdapter

log = logging.getLogger("callplane.engine")


@dataclass(eq=False)
class Switchboard:
    #: The worker's tasks context: the runtime and its retried transactions.
    jobs: TaskContext
    worker_id: str
    concurrency: int
    adapter: TelephonyAdapter
    services: ConversationServices
    #: The calls' moves go through it (one transaction for many calls).
    moves: GroupCommit
    #: Calls this worker holds (their leases are renewed) and the tasks holding them.
    held: set[CallRef] = field(default_factory=set)
    calls: set[asyncio.Task[Any]] = field(default_factory=set)
    #: Set once stopping begins: no new call is claimed or answered.
    draining: bool = False

    @property
    def settings(self) -> Settings:
        return self.jobs.settings

    def hold(self, ref: CallRef, call: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run a call's coroutine as a task of this worker; its lease is renewed meanwhile."""
        self.held.add(ref)
        task = asyncio.create_task(
            traced_call(ref.call_id, call),
            name=f"call-{ref.call_id}",
            context=call_context(ref.organization_id, ref.call_id),  # log lines carry the call
        )
        self.calls.add(task)

        def done(finished: asyncio.Task[None]) -> None:
            self.calls.discard(finished)
            self.held.discard(ref)
            wakeups.local.wake(wakeups.CALLS)  # a slot is free
            if not finished.cancelled() and finished.exception() is not None:
                log.error(
                    "call task failed",
                    exc_info=finished.exception(),
                    extra={"call_id": str(ref.call_id)},
                )

        task.add_done_callback(done)
        return task
