"""Benchmark: what a function tool adds to a turn (issue 25).

    .venv/bin/python bench/tools.py [--turns 20] [--calls 10] [--pause 1.0]

The real TurnLoop, the real OpenAI-compatible brain client talking to the tests' stub server
(streaming, no think time), the real function tool posting, signed, to a real local receiver
that answers at once; the line and the speech engines are the conversation fakes
(tests/fakes.py), so what is measured is the agent, not the audio.

- ``plain``: each caller turn is answered with a line.
- ``tool``: each caller turn is answered by a function tool call, then (its result read) a
  line. Latency = end of the caller's turn to the first media of the agent's line.
- ``10 calls``: ``--calls`` conversations at once, each making a tool call every turn.

The brain stub and the receiver run in a process of their own, as the model's server and the
organization's endpoint do in production: the measured process is the worker alone. Between an
agent's line and the caller's next turn the caller takes ``--pause`` seconds (jittered ±50%),
as a person does; ``--pause 0`` makes every call fire turn after turn with no gap, the worst
case, where ten calls' turns queue for one CPU.

Issue 25's bar: tool p50 <= plain p50 + the receiver's own time + 20 ms; 10 simultaneous calls
not slower than 2x one alone. Prints a table; runs in a few seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from tests.fakes import Conversation  # noqa: E402
from tests.llm_stub import Reply, StubLLM  # noqa: E402
from tests.webhook_receiver import Reply as Answer  # noqa: E402
from tests.webhook_receiver import receiver  # noqa: E402

from callplane.brain import ChatCompletionsBrain  # noqa: E402
from callplane.engine.agent import AgentSpec  # noqa: E402
from callplane.tools import ToolContext  # noqa: E402
from callplane.webhooks.network import webhook_transport  # noqa: E402
from callplane.webhooks.signing import new_secret  # noqa: E402

LINE = "It is sunny in Lisbon today."
SECRET = new_secret()


def spec_for(url: str | None) -> AgentSpec:
    tools: tuple[dict[str, Any], ...] = ()
    if url is not None:
        tools = (
            {
                "type": "function",
                "name": "weather",
                "url": url,
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        )
    return AgentSpec(first_message="Hi.", tools=tools)


async def one_call(
    brain: ChatCompletionsBrain,
    http: httpx.AsyncClient,
    url: str | None,
    turns: int,
    pause: float = 0.0,
) -> list[float]:
    context = ToolContext(connection=None, http=http, tools_secret=SECRET)  # type: ignore[arg-type]
    call = Conversation(spec_for(url), brain, ms_per_char=0.01, tool_context=context)  # type: ignore[arg-type]
    context.connection = call.connection
    call.start()
    await call.until(lambda: call.lines() == ["Hi."])
    for turn in range(turns):
        if pause:
            await asyncio.sleep(random.uniform(0.5, 1.5) * pause)
        call.says(f"What is the weather, turn {turn}?")
        await call.until(lambda n=turn: len(call.latencies) > n and len(call.lines()) > n + 1)
    call.hangs_up()
    await call.ended()
    return call.latencies


def peers(connection: Any) -> None:
    """The child process: the two brain stubs and the receiver, until told to stop."""

    async def serve() -> None:
        stub_plain = StubLLM(replies=[LINE])
        stub_tool = StubLLM(replies=[Reply("", "weather", {"city": "Lisbon"})], after_tool=[LINE])
        with stub_plain, stub_tool:
            async with receiver(lambda _n: Answer(body=b'{"sky": "sunny"}')) as endpoint:
                connection.send((stub_plain.base_url, stub_tool.base_url, endpoint.url))
                await asyncio.get_running_loop().run_in_executor(None, connection.recv)

    asyncio.run(serve())


async def main(turns: int, calls: int, pause: float) -> None:
    here, there = multiprocessing.Pipe()
    child = multiprocessing.get_context("spawn").Process(target=peers, args=(there,))
    child.start()
    try:
        plain_url, tool_url, endpoint_url = here.recv()
        # One brain client per process, shared by its calls, as a worker's providers hold it.
        plain_brain = ChatCompletionsBrain(plain_url, timeout_seconds=10)
        tool_brain = ChatCompletionsBrain(tool_url, timeout_seconds=10)
        async with (
            contextlib.aclosing(plain_brain),
            contextlib.aclosing(tool_brain),
            httpx.AsyncClient(transport=webhook_transport(True), timeout=30) as http,
        ):
            await one_call(tool_brain, http, endpoint_url, 3)  # warm-up
            plain = await one_call(plain_brain, http, None, turns, pause)
            tool = await one_call(tool_brain, http, endpoint_url, turns, pause)
            many_plain = await asyncio.gather(
                *(one_call(plain_brain, http, None, turns, pause) for _ in range(calls))
            )
            started = time.perf_counter()
            many = await asyncio.gather(
                *(one_call(tool_brain, http, endpoint_url, turns, pause) for _ in range(calls))
            )
            wall = time.perf_counter() - started
    finally:
        here.send("stop")
        child.join(10)
    print(f"caller pause {pause:.2f} s (jittered), load {os.getloadavg()[0]:.1f}")
    p50_plain, p50_tool = statistics.median(plain), statistics.median(tool)
    p50_many = statistics.median([x for latencies in many for x in latencies])
    print(f"{'case':<28}{'p50 ms':>10}{'p90 ms':>10}")
    for name, values in (("plain turn", plain), ("function tool turn", tool)):
        print(f"{name:<28}{statistics.median(values) * 1000:>10.1f}{_p90(values) * 1000:>10.1f}")
    merged = [x for latencies in many for x in latencies]
    merged_plain = [x for latencies in many_plain for x in latencies]
    p50_many_plain = statistics.median(merged_plain)
    for name, values in (
        (f"plain turn, {calls} calls", merged_plain),
        (f"tool turn, {calls} calls", merged),
    ):
        print(f"{name:<28}{statistics.median(values) * 1000:>10.1f}{_p90(values) * 1000:>10.1f}")
    print(f"tool adds {(p50_tool - p50_plain) * 1000:.1f} ms (bar: receiver time + 20 ms)")
    print(
        f"{calls} calls at once: {p50_many / p50_tool:.2f}x one alone (bar: 2x; plain turns: "
        f"{p50_many_plain / p50_plain:.2f}x); {wall:.1f} s for {calls} x {turns} tool turns"
    )


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--pause", type=float, default=1.0)
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.calls, args.pause))
