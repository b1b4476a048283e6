"""Warm transfer (docs/tools.md#transfers): dial the destination as a second leg, let the tool
brief the person who answers, then bridge the caller's and the person's audio until either
hangs up, and hang up the other.

The bridge joins two ``AudioLine``s (``audio_line.join``): each one's far-end audio goes out of
the other, so the caller's connection keeps recording both voices (what it sends is the
person's, what it hears the caller's). The agent is out of the call from then on
(``handed_over``): the engine hears nothing more and what it plays is dropped; its ``hangup``
still ends the call at once (the maximum call length, a worker that stops), and the bridge then
hangs up the person too. Nothing outlives the call: the bridge is one task per transfer that
ends when either leg does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from callplane.telephony.audio_line import AudioLine
from callplane.telephony.base import Brief, DialFailed, TransferOutcome

logger = logging.getLogger("callplane.telephony.bridge")

#: How long a warm transfer's destination may ring.
RING_SECONDS = 30.0

#: What the agent is told when the destination does not take the call (it tells the caller).
WHY_NOT = {
    "busy": "the line is busy",
    "no_answer": "nobody answered",
    "failed": "the call could not be placed",
}

#: Bridges under way; a task is only weakly held by the event loop.
_bridges: set[asyncio.Task[None]] = set()


async def warm_transfer(
    caller: AudioLine,
    dial: Callable[[], Awaitable[tuple[AudioLine, str]]],
    brief: Brief | None,
) -> TransferOutcome:
    """``dial`` places the second leg (the person's connection and its SIP Call-ID, or
    ``DialFailed``); accepted once the person was briefed and the bridge is up."""
    try:
        person, leg_call_id = await dial()
    except DialFailed as failed:
        return TransferOutcome(False, f"{WHY_NOT[failed.outcome]} ({failed.reason})")
    try:
        if brief is not None:
            await brief(person)
    except BaseException:
        # Cancelled (the caller spoke, the call is ending) or the brief failed: the person is
        # not left on a silent line.
        await asyncio.shield(person.hangup())
        raise
    if caller.ended or person.ended:
        await person.hangup()
        who = "the caller" if caller.ended else "the person"
        return TransferOutcome(False, f"{who} hung up before they were put through")
    bridge(caller, person)
    return TransferOutcome(True, leg_call_id=leg_call_id)


def bridge(caller: AudioLine, person: AudioLine) -> None:
    """Join the two lines until either ends, then hang up the other."""
    caller.join(person)
    person.join(caller)
    task = asyncio.get_running_loop().create_task(_hold(caller, person), name="bridge")
    _bridges.add(task)
    task.add_done_callback(_bridges.discard)


async def _hold(caller: AudioLine, person: AudioLine) -> None:
    ends = [asyncio.ensure_future(line.wait_ended()) for line in (caller, person)]
    try:
        await asyncio.wait(ends, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for end in ends:
            end.cancel()
        # Whoever is still on the line is hung up: the caller's ``ended_by`` then says
        # "local" (the person hung up) where it says "remote" when the caller did.
        for line in (person, caller):
            with contextlib.suppress(Exception):
                await line.hangup()
        caller.join(None)
        person.join(None)
        logger.info("warm transfer: the bridge ended")
