"""The threads speech work runs on, off the event loop: one pool for recognition, one for
synthesis, one for the end-of-turn model; each bounded, none the event loop's default executor.

Why separate: synthesis threads mostly wait (on a Piper voice's lock, or an espeak-ng
process). In one shared pool (``to_thread``'s), a burst of sentences queued on Piper took every
thread, and a caller's turn could not even start recognising until a sentence was spoken; other
users of ``to_thread`` (password hashing, files) waited too. Here each kind of work queues only
behind its own kind.

Recognition uses every core per turn (CTranslate2's threads; the model runs two recognitions
at once, ``transcriber.MODEL_WORKERS``), so more threads than cores would only queue inside
the model; synthesis threads are mostly idle waiting on a child process, so it gets a few per
core.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

Kind = Literal["recognition", "synthesis", "turn"]

_pools: dict[Kind, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def pool_size(kind: Kind) -> int:
    cores = os.cpu_count() or 1
    # The end-of-turn model scores in ~10 ms on one thread: a pool of its own keeps it from
    # queueing behind a recognition that takes every core for a second.
    return 4 * cores if kind == "synthesis" else cores


def executor(kind: Kind) -> ThreadPoolExecutor:
    """The process's pool for ``kind`` (created on first use; lives as long as the process)."""
    with _pools_lock:
        pool = _pools.get(kind)
        if pool is None:
            pool = _pools[kind] = ThreadPoolExecutor(pool_size(kind), thread_name_prefix=kind)
        return pool


async def run(kind: Kind, func: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``asyncio.to_thread`` on ``kind``'s pool (the caller's context variables go along, as
    with ``to_thread``: the trace a turn belongs to)."""
    context = contextvars.copy_context()
    call = functools.partial(context.run, func, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(executor(kind), call)
