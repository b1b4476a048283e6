"""10 simultaneous simulated conversations on one worker (part of bench/conversation.py).

A real app (SQLite in a temp dir, the engine embedded, simulated telephony whose person follows a
three-line script, the stub brain of the tests) takes calls through the API; each call's
``call.analyzed`` event carries its turns' response latency. One call alone, then ten at once,
for each brain think time asked for: with none, a turn is ~3 ms of CPU and ten turns arriving in
the same millisecond queue for it; with a hosted model's time to first token the question is
whether the worker adds anything to it.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from typing import Any

import httpx
from tests.llm_stub import Reply, StubLLM

from callplane.app import create_app
from callplane.kit.db import Database
from callplane.migrate import upgrade
from callplane.orgs.service import create_organization, issue_key
from callplane.settings import Settings

SCRIPT = ["I need to move my appointment.", "Friday morning, please.", "No, that's all."]
REPLIES = [
    "Sure, I can help with that. Which day suits you?",
    "Friday at nine is free. Shall I book it?",
    "Done. Anything else?",
    Reply("Goodbye!", "end_call"),
]


async def _run(concurrent: int, brain_seconds: float) -> list[float]:
    directory = tempfile.mkdtemp(prefix="callplane-bench-")
    url = f"sqlite:///{directory}/bench.db"
    database = Database(url, pool_size=1)
    await upgrade(database)
    await database.dispose()
    with StubLLM(replies=REPLIES, first_token_seconds=brain_seconds) as stub:
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None,
            database_url=url,
            storage_url=f"file://{directory}/recordings",
            log_level="warning",
            rate_limit="off",
            worker="embedded",
            worker_poll_seconds=0.05,
            max_concurrent_calls=concurrent,
            simulated_call_seconds=30,
            simulated_script=SCRIPT,
            llm_base_url=stub.base_url,
            # The numbers of docs/ were measured with espeak-ng, before Piper's joe voice became
            # the default: the same voice keeps them comparable.
            voice_engine="espeak-ng:en-us",
        )
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            runtime = app.state.runtime
            async with runtime.db.session(write=True) as session:
                org = await create_organization(session, "Bench")
                key = await issue_key(session, org.id)
                await session.commit()
            headers = {"Authorization": f"Bearer {key.api_key}"}
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
                created = await asyncio.gather(
                    *(
                        client.post(
                            "/v1/calls", json={"to_number": "+14155550100"}, headers=headers
                        )
                        for _ in range(concurrent)
                    )
                )
                ids = [r.json()["call_id"] for r in created]
                return [x for call_id in ids for x in await _latencies(client, headers, call_id)]


async def _latencies(client: httpx.AsyncClient, headers: dict[str, str], call_id: str) -> list[Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        events = (await client.get(f"/v1/calls/{call_id}/events", headers=headers)).json()
        for event in events["events"]:
            if event["type"] == "call.analyzed":
                return [ms / 1000 for ms in event["data"]["response_latency_ms"]]
        await asyncio.sleep(0.1)
    raise RuntimeError(f"call {call_id} was not analyzed within 60 s")


def bench_simulated(brain_seconds: tuple[float, ...] = (0.0,)) -> None:
    """For each brain think time (the stub's time to its first token): one call, then ten."""
    for think in brain_seconds:
        for concurrent in (1, 10):
            ms = sorted(x * 1000 for x in asyncio.run(_run(concurrent, think)))
            p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
            print(
                f"simulated, brain {think * 1000:.0f} ms to first token, {concurrent:2d} at once: "
                f"{len(ms)} turns, p50 {ms[len(ms) // 2]:.0f} ms, p95 {p95:.0f} ms, "
                f"mean {statistics.fmean(ms):.0f} ms"
            )
