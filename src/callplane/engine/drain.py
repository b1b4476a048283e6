"""Draining a worker on SIGTERM (docs/sip-edge.md), for ``callplane worker`` and ``serve``'s engine.

The first SIGTERM (or SIGINT) starts a drain: the adapter refuses new calls (SIP: 503 to INVITE
and OPTIONS, so the Kamailio edge sends them to another worker), no outbound call is claimed,
and the calls in progress go on for up to CALLPLANE_DRAIN_SECONDS. Then the engine stops (what
is left is hung up and completed) and the process exits 0. A second signal ends the wait at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from callplane.engine.worker import Engine

log = logging.getLogger("callplane.engine")

SIGNALS = (signal.SIGTERM, signal.SIGINT)
#: What a person waiting on a drain wants to know: it need not wait.
HINT = "a second Ctrl-C (or SIGTERM) stops at once"


class StopSignals:
    """The first stop signal asks for a drain (``requested``); the second, to hurry."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.requested = asyncio.Event()
        self.hurry = asyncio.Event()

    def received(self) -> None:
        if self.requested.is_set():
            if not self.hurry.is_set():
                log.warning("second stop signal: ending the calls in progress now")
            self.hurry.set()
        else:
            log.info(f"stop signal: draining ({HINT})")
            self.requested.set()

    def _received_threadsafe(self) -> None:
        # From a signal.signal handler: wake the loop, which may be waiting in select().
        self._loop.call_soon_threadsafe(self.received)

    @classmethod
    def install(cls) -> StopSignals:
        """Own SIGTERM and SIGINT (``callplane worker``)."""
        loop = asyncio.get_running_loop()
        signals = cls(loop)
        for sig in SIGNALS:
            loop.add_signal_handler(sig, signals.received)
        return signals


@contextlib.contextmanager
def watch_signals() -> Iterator[StopSignals]:
    """Note SIGTERM and SIGINT while passing them on to whoever handles them already (uvicorn,
    in ``serve``: it shuts the app down, whose lifespan then drains the engine). Outside the
    main thread no signal can be watched: nothing is ever requested."""
    signals = StopSignals(asyncio.get_running_loop())
    if threading.current_thread() is not threading.main_thread():
        yield signals
        return
    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}

    def handler(signum: int, frame: FrameType | None) -> None:
        signals._received_threadsafe()
        before = previous[signal.Signals(signum)]
        if callable(before):
            before(signum, frame)
        elif before != signal.SIG_IGN:
            # Nobody would shut the app down on it (no uvicorn): the signal does what it did.
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)

    for sig in SIGNALS:
        signal.signal(sig, handler)
    try:
        yield signals
    finally:
        for sig in SIGNALS:
            if signal.getsignal(sig) is handler:
                before = previous[sig]
                signal.signal(sig, signal.SIG_DFL if before is None else before)


async def drain(engine: Engine, seconds: float, hurry: asyncio.Event | None = None) -> None:
    """Stop taking work, let the calls in progress finish (up to ``seconds``, or until
    ``hurry`` is set), then stop the engine."""
    board = engine.board
    board.draining = True
    with contextlib.suppress(Exception):
        await engine.adapter.stop()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    hurrying = asyncio.ensure_future((hurry or asyncio.Event()).wait())
    try:
        if board.calls:
            log.info(
                f"draining: waiting for calls in progress ({HINT})",
                extra={"calls": len(board.calls), "drain_seconds": seconds},
            )
        while board.calls and not hurrying.done():
            left = deadline - loop.time()
            if left <= 0:
                log.info("drain time is up", extra={"calls": len(board.calls)})
                break
            await asyncio.wait(
                {hurrying, *board.calls}, timeout=left, return_when=asyncio.FIRST_COMPLETED
            )
    finally:
        hurrying.cancel()
    await engine.stop(grace=0)
