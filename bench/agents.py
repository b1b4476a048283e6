"""Benchmark: what agents cost (issue 24).

    .venv/bin/python bench/agents.py [--backend sqlite|postgresql]
        [--postgres-url postgresql://postgres@127.0.0.1:5432/postgres] [--calls 2000]
        [--concurrency 16] [--reads 300] [--rounds 8]

In process, over the same ASGI app the server runs (auth, routing, unit of work, serialization):

- ``POST /calls`` throughput without an agent and with one (``agent_id``: the branch head and its
  commit resolved, ``required_variables`` checked against params), interleaved in rounds so both
  see the same machine; the bar is at most 10% fewer calls/s with an agent.
- ``GET /agents/{uuid}/commits`` (first page, and ``branch=main``) and ``GET .../diff`` between
  the first and the last commit, for an agent with 10 commits and one with 1,000: the ratio of
  medians (the bar: "as fast").
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from callplane.agents.service import resolve_for_call  # noqa: E402
from callplane.app import create_app  # noqa: E402
from callplane.kit.db import Database  # noqa: E402
from callplane.migrate import upgrade  # noqa: E402
from callplane.orgs.service import create_organization, issue_key  # noqa: E402
from callplane.settings import Settings  # noqa: E402


async def _database(args: argparse.Namespace, scratch: Path) -> tuple[str, Any]:
    if args.backend == "sqlite":
        return f"sqlite:///{scratch / 'bench.db'}", None
    import asyncpg

    name = f"callplane_bench_agents_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(args.postgres_url.replace("postgresql://", "postgres://"))
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    return args.postgres_url.rsplit("/", 1)[0] + f"/{name}", name


async def _post_calls(
    client: httpx.AsyncClient, headers: dict[str, str], body: dict[str, Any], n: int, width: int
) -> float:
    """Calls per second for ``n`` creations, ``width`` in flight."""
    remaining = iter(range(n))

    async def worker() -> None:
        for _ in remaining:
            response = await client.post("/v1/calls", headers=headers, json=body)
            assert response.status_code == 201, response.text

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(width)))
    return n / (time.perf_counter() - started), n / (time.process_time() - cpu)


async def _resolve_us(app: Any, organization_id: int, agent_id: str, n: int = 2000) -> float:
    """What ``resolve_for_call`` costs by itself, in one transaction: the part of a call's
    creation an agent adds, apart from the wider row and response."""
    async with app.state.runtime.db.session(write=True) as session:
        agent_uuid = uuid.UUID(agent_id)
        await resolve_for_call(session, organization_id, agent_uuid=agent_uuid)
        started = time.process_time()
        for _ in range(n):
            await resolve_for_call(session, organization_id, agent_uuid=agent_uuid)
        return (time.process_time() - started) / n * 1e6


async def _median_us(client: httpx.AsyncClient, headers: dict[str, str], url: str, n: int) -> float:
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        response = await client.get(url, headers=headers)
        samples.append((time.perf_counter() - started) * 1e6)
        assert response.status_code == 200, response.text
    return statistics.median(samples)


async def _agent_with(
    client: httpx.AsyncClient, headers: dict[str, str], commits: int
) -> tuple[str, str, str]:
    made = await client.post(
        "/v1/agents",
        headers=headers,
        json={"name": f"a{commits}", "config": {"prompt": "v0", "required_variables": ["name"]}},
    )
    agent = made.json()["agent"]
    first = agent["branches"][0]["head"]
    last = first
    for n in range(1, commits):
        response = await client.post(
            f"/v1/agents/{agent['id']}/commits",
            headers=headers,
            json={"changes": {"prompt": f"v{n}"}, "message": f"change {n}"},
        )
        last = response.json()["commit"]["id"]
    return agent["id"], first, last


async def main(args: argparse.Namespace) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="callplane-bench-agents-"))
    url, _pg_name = await _database(args, scratch)
    db = Database(url, pool_size=2)
    await upgrade(db)
    async with db.session(write=True) as session:
        org = await create_organization(session, "bench")
        key = await issue_key(session, org.id)
        await session.commit()
    await db.dispose()
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, database_url=url, rate_limit="off", log_level="warning", worker="off"
    )
    app = create_app(settings)
    lifespan = app.router.lifespan_context(app)
    await lifespan.__aenter__()
    headers = {"Authorization": f"Bearer {key.api_key}"}
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://bench"
        ) as client:
            small = await _agent_with(client, headers, 10)
            large = await _agent_with(client, headers, 1000)
            plain = {"to_number": "+14155550100", "params": {"name": "Ada"}}
            with_agent = {**plain, "agent_id": small[0]}
            rates: dict[str, list[float]] = {"without agent": [], "with agent": []}
            cpu_rates: dict[str, list[float]] = {"without agent": [], "with agent": []}
            per_round = max(args.calls // args.rounds, 50)
            await _post_calls(client, headers, plain, 100, args.concurrency)  # warm-up
            cases = [("without agent", plain), ("with agent", with_agent)]
            for round_number in range(args.rounds):
                # Each side goes first in half the rounds: the database grows as calls are
                # added, and whoever always came second would always meet the bigger one.
                for label, body in cases if round_number % 2 == 0 else cases[::-1]:
                    rate, cpu_rate = await _post_calls(
                        client, headers, body, per_round, args.concurrency
                    )
                    rates[label].append(rate)
                    cpu_rates[label].append(cpu_rate)
            base, agent_rate = (statistics.median(rates[k]) for k in rates)
            cpu_base, cpu_agent = (statistics.median(cpu_rates[k]) for k in cpu_rates)
            print(
                f"POST /calls ({args.backend}, {args.concurrency} in flight, {args.rounds} rounds,"
                f" load {os.getloadavg()[0]:.1f})"
            )
            print(f"  without agent  {base:8.0f} calls/s  {cpu_base:8.0f} calls/CPU-s")
            print(
                f"  with agent     {agent_rate:8.0f} calls/s  {cpu_agent:8.0f} calls/CPU-s"
                f"  ({agent_rate / base:.2f}x wall, {cpu_agent / cpu_base:.2f}x CPU)"
            )
            print(
                f"  the agent's resolution alone: {await _resolve_us(app, org.id, small[0]):.1f} us"
                f" a call (of {1e6 / cpu_base:.0f} us of CPU a call without an agent)"
            )
            print(f"history and diff ({args.reads} requests each, median us)")
            for label, path in [
                ("history", "/commits?page_size=20"),
                ("history main", "/commits?page_size=20&branch=main"),
                ("diff", "/diff?from={first}&to={last}"),
            ]:
                times = []
                for agent_id, first, last in (small, large):
                    query = path.format(first=first, last=last)
                    times.append(
                        await _median_us(
                            client, headers, f"/v1/agents/{agent_id}{query}", args.reads
                        )
                    )
                print(
                    f"  {label:13s} 10 commits {times[0]:8.0f}  1,000 commits {times[1]:8.0f}"
                    f"  ratio {times[1] / times[0]:.2f}"
                )
    finally:
        await lifespan.__aexit__(None, None, None)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--postgres-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--reads", type=int, default=300)
    asyncio.run(main(parser.parse_args()))
