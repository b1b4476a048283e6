"""Benchmark: a suite of agent tests in text mode (issue 35: 100 tests in under 60 s).

    .venv/bin/python bench/agent_tests.py [--tests 100] [--turns 2] [--judged 25]

In process: the app with its embedded worker (as ``callplane serve`` runs on SQLite) over a fresh
SQLite database, and the tests' stub OpenAI-compatible server (``tests/llm_stub.py``) as agent and
judge, answering at once: what is measured is callplane's own cost of a run (the worker, the
turns, the checks, the database), from ``POST /test_runs`` until the run is finished.
Audio mode plays in real time by construction; ``--audio N`` times N audio tests and prints
the wall time of each beside the test's own spoken length (so the overhead shows).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.llm_stub import Reply, StubLLM  # noqa: E402

from callplane.app import create_app  # noqa: E402
from callplane.kit.db import Database  # noqa: E402
from callplane.migrate import upgrade  # noqa: E402
from callplane.orgs.service import create_organization, issue_key  # noqa: E402
from callplane.settings import Settings  # noqa: E402

CONFIG: dict[str, Any] = {
    "prompt": "You are Riley at Bright Smiles.",
    "first_message": "Hi, this is Bright Smiles.",
    "tools": [
        {
            "type": "function",
            "name": "book",
            "url": "https://example.com/book",
            "parameters": {"type": "object", "properties": {"day": {"type": "string"}}},
        }
    ],
}


def _test(number: int, turns: int, judged: bool) -> dict[str, Any]:
    test: dict[str, Any] = {
        "name": f"case {number:03d}",
        "turns": [{"user": f"Line {n} of case {number}, Monday please."} for n in range(turns)],
        "mocks": {"book": {"confirmed": True}},
        "expect": {
            "tool_calls": [{"name": "book", "arguments": {"day": "Monday"}}],
            "said": ["(?i)booked", "Monday"],
            "not_said": "sorry",
            "ended": False,
        },
    }
    if judged:
        test["judge"] = ["The agent confirms the booking"]
    return test


async def main(args: argparse.Namespace) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="callplane-bench-agent-tests-"))
    url = f"sqlite:///{scratch / 'bench.db'}"
    db = Database(url, pool_size=2)
    await upgrade(db)
    async with db.session(write=True) as session:
        org = await create_organization(session, "bench")
        key = await issue_key(session, org.id)
        await session.commit()
    await db.dispose()
    replies = [Reply("Booking Monday.", tool="book", arguments={"day": "Monday"}), "Anything else?"]
    with StubLLM(replies=replies, after_tool=["You are booked for Monday."]) as llm:
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None,
            database_url=url,
            rate_limit="off",
            log_level="warning",
            worker="embedded",
            worker_poll_seconds=0.05,
            llm_base_url=llm.base_url,
            # As measured before Piper's joe voice became the default (comparable numbers).
            voice_engine="espeak-ng:en-us",
        )
        app = create_app(settings)
        lifespan = app.router.lifespan_context(app)
        await lifespan.__aenter__()
        headers = {"Authorization": f"Bearer {key.api_key}"}
        try:
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://bench", timeout=60
            ) as client:
                made = await client.post(
                    "/v1/agents", headers=headers, json={"name": "Riley", "config": CONFIG}
                )
                agent = made.json()["agent"]["id"]
                every = max(args.tests // max(args.judged, 1), 1)
                for number in range(args.tests):
                    body = _test(number, args.turns, args.judged > 0 and number % every == 0)
                    response = await client.post(
                        f"/v1/agents/{agent}/tests", headers=headers, json=body
                    )
                    assert response.status_code == 201, response.text
                started = time.perf_counter()
                cpu = time.process_time()
                response = await client.post(
                    f"/v1/agents/{agent}/test_runs", headers=headers, json={}
                )
                run = response.json()["test_run"]
                while run["status"] == "running":
                    await asyncio.sleep(0.05)
                    run = (
                        await client.get(
                            f"/v1/agents/{agent}/test_runs/{run['id']}", headers=headers
                        )
                    ).json()["test_run"]
                wall, used = time.perf_counter() - started, time.process_time() - cpu
                if args.audio:
                    await _audio(client, headers, agent, args.audio)
        finally:
            await lifespan.__aexit__(None, None, None)
    passed = sum(r["passed"] for r in run["results"])
    requests = len(llm.requests)
    print(
        f"{args.tests} text tests ({args.turns} caller lines each, {args.judged} judged): "
        f"{run['status']}, {passed}/{len(run['results'])} passed"
    )
    print(f"  {wall:.1f} s wall ({wall / args.tests * 1000:.0f} ms a test), {used:.1f} s CPU")
    load = os.getloadavg()[0]
    print(f"  {requests} model requests; load average {load:.2f} on {os.cpu_count()} cores")


AUDIO_LINE = "I would like a cleaning on Monday please."


async def _audio(client: httpx.AsyncClient, headers: dict[str, str], agent: str, n: int) -> None:
    """N one-line audio tests, one after another (as an audio run goes): wall time per test
    against the length of what is said in it (the opening, the caller's line, the two replies
    the stub gives, at espeak-ng's pace) plus the quiet the caller waits after each reply."""
    from callplane.engine.agent_audio import REPLY_QUIET_SECONDS
    from callplane.speech.synthesis import EspeakSynthesizer

    espeak = EspeakSynthesizer()
    spoken = [CONFIG["first_message"], AUDIO_LINE, "Booking Monday.", "You are booked for Monday."]
    seconds = sum(len(espeak.synthesize(text, 8000)) / 16000 for text in spoken)
    seconds += 2 * REPLY_QUIET_SECONDS
    names = []
    for number in range(n):
        body = {"name": f"audio {number}", "turns": [{"user": AUDIO_LINE}], "expect": {}}
        response = await client.post(f"/v1/agents/{agent}/tests", headers=headers, json=body)
        assert response.status_code == 201, response.text
        names.append(body["name"])
    started = time.perf_counter()
    response = await client.post(
        f"/v1/agents/{agent}/test_runs", headers=headers, json={"tests": names, "mode": "audio"}
    )
    run = response.json()["test_run"]
    while run["status"] == "running":
        await asyncio.sleep(0.2)
        run = (
            await client.get(f"/v1/agents/{agent}/test_runs/{run['id']}", headers=headers)
        ).json()["test_run"]
    per_test = (time.perf_counter() - started) / n
    replies = [ms for r in run["results"] for rep in r["runs"] for ms in rep["reply_ms"]]
    print(
        f"{n} audio tests ({run['status']}): {per_test:.1f} s a test for {seconds:.1f} s of "
        f"audio ({per_test / seconds:.2f}x real time, the first one loading the recogniser);"
        f" reply_ms {replies}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=100)
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--judged", type=int, default=25)
    parser.add_argument("--audio", type=int, default=0, help="also time N audio-mode tests")
    asyncio.run(main(parser.parse_args()))
