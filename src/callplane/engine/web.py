"""Web calls are held by the process that answered their offer (docs/web-calls.md).

The browser's media goes to the address in our SDP answer, so the ``serve`` process that
answered ``POST /web_calls`` holds the call: whatever CALLPLANE_WORKER says, and on PostgreSQL
too, where ``callplane worker`` processes hold the phone calls. ``WebCallHost`` is that
process's engine for web calls: an ``Engine`` with the WebRTC network and only the leases task
(its calls' leases are renewed, and a crashed server's web calls are failed like a worker's).
It is built at the first web call (Whisper takes seconds and memory to load) and stopped with
the app.

A web call is created answered (``in_progress``, like an inbound phone call) and then runs
through the engine's ``converse``: the same turn loop, recording, transcript, analysis, events
and webhooks as a phone call. While it lasts, its transcript is sent to the browser over the
data channel, for a live view.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from callplane.engine.calls import converse
from callplane.engine.conversation.session import CallContext
from callplane.engine.leases import leases_task
from callplane.engine.lifecycle import CallRef
from callplane.engine.switchboard import Switchboard
from callplane.engine.worker import Engine
from callplane.models.calls import Call
from callplane.runtime import Runtime
from callplane.speech.transcriber import shared_transcriber
from callplane.web_calls.service import WebCallSpec, open_web_call

if TYPE_CHECKING:
    from callplane.telephony.webrtc import WebRtcConnection

log = logging.getLogger("callplane.engine.web")

#: How often the live transcript is compared with what the browser was last sent.
LIVE_TRANSCRIPT_SECONDS = 0.25


class WebCallHost:
    """``web_calls.host.WebCallHost``, for the app's process."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._engine: Engine | None = None
        self._starting = asyncio.Lock()

    async def engine(self) -> Engine:
        async with self._starting:
            if self._engine is None:
                # aiortc and PyAV come with the speech extra: imported by the first web call.
                from callplane.telephony.webrtc import WebRtcTelephony

                engine = Engine(self.runtime, adapter=WebRtcTelephony(), tasks=[])
                # The leases task only: a web call is never claimed from the queue.
                engine.tasks.append(leases_task(engine.board))
                providers = engine.board.services.providers
                if providers.transcriber is None:
                    # The worker's providers load Whisper for SIP only; a browser always speaks.
                    providers.transcriber = await asyncio.to_thread(
                        shared_transcriber, self.runtime.settings, "live"
                    )
                await engine.start()
                self._engine = engine
            return self._engine

    async def open_call(self, spec: WebCallSpec, connection: WebRtcConnection) -> Call:
        """Create the answered call (spending its token) and hold it until it ends."""
        engine = await self.engine()
        call = await engine.runner.transact(open_web_call, spec, engine.worker_id)
        connection.call_ref = str(call.id)
        self._begin(engine.board, call, connection)
        return call

    def _begin(self, board: Switchboard, call: Call, connection: WebRtcConnection) -> None:
        """Hold the answered call until it ends (the engine completes and analyses it)."""
        settings = self.runtime.settings
        connection.start(
            connect_seconds=settings.web_call_connect_seconds,
            silence_seconds=settings.web_call_silence_seconds,
        )
        ref = CallRef(call.organization_id, call.id, board.worker_id)
        context = CallContext.from_call(call)
        board.hold(ref, _converse_live(board, call, ref, connection, context))

    async def stop(self) -> None:
        if self._engine is not None:
            await self._engine.stop()
            self._engine = None


async def _converse_live(
    board: Switchboard,
    call: Call,
    ref: CallRef,
    connection: WebRtcConnection,
    context: CallContext,
) -> None:
    live = asyncio.create_task(_send_transcript(connection, context))
    try:
        await converse(board, call, ref, connection, context)
    finally:
        live.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await live


async def _send_transcript(connection: WebRtcConnection, context: CallContext) -> None:
    sent: list[dict[str, Any]] = []
    while not connection.ended:
        entries = [dict(entry) for entry in context.transcript]
        if entries != sent:
            connection.send({"type": "transcript", "entries": entries})
            sent = entries
        await asyncio.sleep(LIVE_TRANSCRIPT_SECONDS)


@contextlib.asynccontextmanager
async def web_call_host(runtime: Runtime) -> AsyncIterator[WebCallHost]:
    host = WebCallHost(runtime)
    try:
        yield host
    finally:
        await host.stop()
